// Issue 22 experiment: all-pairs accelerations computing each pair once (Newton's third law).
// Block (c, b) takes the 1024 bodies i of group b (128 threads x 8) against chunk c of the
// bodies j after the group; chunk 0 of every group is the group against itself, computed
// one way only. Per pair: d (3 FADD), r^2 (3 FFMA), 1/r (MUFU), 1/r^3 (2 FMUL), m_j/r^3 and
// m_i/r^3 (2 FMUL), a_i += (3 FFMA), the j side summed over the thread's 8 bodies (3 FFMA):
// 17 instructions for two interactions. The j side goes to a per-warp copy of the tile's
// accumulators in shared memory after each step (one LDS.128, 3 FADD, one STS.128), and the
// block's sums to a float4 scratch in global memory with vector atomics.
#pragma once

namespace symmetric {

constexpr int threads = 128;
constexpr int bodies_per_thread = 8;
constexpr int group = threads * bodies_per_thread;  // bodies i per block
constexpr int tile = threads;                       // bodies j per shared-memory tile
constexpr int warps = threads / 32;

__device__ __forceinline__ float rsqrt_ftz(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ void add_vector(float4* p, float x, float y, float z) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x), "f"(y), "f"(z), "f"(0.f)
               : "memory");
}

__global__ void __launch_bounds__(threads, 3)
    pairs_kernel(const float4* __restrict__ pos_mass, int n, float softening2, float4* __restrict__ sums,
                 int chunk_bodies) {
  __shared__ float4 tile_pos[tile];
  __shared__ float4 tile_acc[warps][tile];

  const int group_begin = blockIdx.y * group;
  const bool diagonal = blockIdx.x == 0;
  const int j_begin = diagonal ? group_begin : group_begin + group + (blockIdx.x - 1) * chunk_bodies;
  const int j_end = diagonal ? min(n, group_begin + group) : min(n, j_begin + chunk_bodies);
  if (j_begin >= j_end) return;

  float4 me[bodies_per_thread];
  float3 acc[bodies_per_thread];
#pragma unroll
  for (int k = 0; k < bodies_per_thread; ++k) {
    const int i = group_begin + threadIdx.x + k * threads;
    me[k] = i < n ? pos_mass[i] : make_float4(0.f, 0.f, 0.f, 0.f);  // mass 0: adds nothing to j
    acc[k] = make_float3(0.f, 0.f, 0.f);
  }
  const int warp = threadIdx.x / 32;

  for (int tile_start = j_begin; tile_start < j_end; tile_start += tile) {
    const int j = tile_start + threadIdx.x;
    tile_pos[threadIdx.x] = j < j_end ? pos_mass[j] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < warps; ++w) tile_acc[w][threadIdx.x] = make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    if (diagonal) {
      // One way only: every body i against every body j of its own group (j == i adds zero).
#pragma unroll 4
      for (int jj = 0; jj < tile; ++jj) {
        const float4 o = tile_pos[jj];
#pragma unroll
        for (int k = 0; k < bodies_per_thread; ++k) {
          const float dx = o.x - me[k].x, dy = o.y - me[k].y, dz = o.z - me[k].z;
          const float r2 = fmaf(dz, dz, fmaf(dy, dy, fmaf(dx, dx, softening2)));
          const float inv_r = rsqrt_ftz(r2);
          const float s = (o.w * inv_r) * (inv_r * inv_r);
          acc[k].x = fmaf(dx, s, acc[k].x);
          acc[k].y = fmaf(dy, s, acc[k].y);
          acc[k].z = fmaf(dz, s, acc[k].z);
        }
      }
    } else {
      // Step s: this thread's bodies against body (thread + s) mod 128 of the tile, which no
      // other lane of the warp has at this step; the warp's copy of the j sums is its own.
#pragma unroll 2
      for (int step = 0; step < tile; ++step) {
        const int jj = (threadIdx.x + step) & (tile - 1);
        const float4 o = tile_pos[jj];
        float jx = 0.f, jy = 0.f, jz = 0.f;
#pragma unroll
        for (int k = 0; k < bodies_per_thread; ++k) {
          const float dx = o.x - me[k].x, dy = o.y - me[k].y, dz = o.z - me[k].z;
          const float r2 = fmaf(dz, dz, fmaf(dy, dy, fmaf(dx, dx, softening2)));
          const float inv_r = rsqrt_ftz(r2);
          const float inv_r3 = inv_r * (inv_r * inv_r);
          const float si = o.w * inv_r3, sj = me[k].w * inv_r3;
          acc[k].x = fmaf(dx, si, acc[k].x);
          acc[k].y = fmaf(dy, si, acc[k].y);
          acc[k].z = fmaf(dz, si, acc[k].z);
          jx = fmaf(dx, sj, jx);  // a_j gets m_i (p_i - p_j) / r^3: subtracted below
          jy = fmaf(dy, sj, jy);
          jz = fmaf(dz, sj, jz);
        }
        float4 t = tile_acc[warp][jj];
        t.x -= jx, t.y -= jy, t.z -= jz;
        tile_acc[warp][jj] = t;
        __syncwarp();
      }
    }
    __syncthreads();
    if (!diagonal && j < j_end) {
      float x = 0.f, y = 0.f, z = 0.f;
#pragma unroll
      for (int w = 0; w < warps; ++w) x += tile_acc[w][threadIdx.x].x, y += tile_acc[w][threadIdx.x].y, z += tile_acc[w][threadIdx.x].z;
      add_vector(sums + j, x, y, z);
    }
    __syncthreads();
  }
#pragma unroll
  for (int k = 0; k < bodies_per_thread; ++k) {
    const int i = group_begin + threadIdx.x + k * threads;
    if (i < n) add_vector(sums + i, acc[k].x, acc[k].y, acc[k].z);
  }
}

__global__ void to_float3_kernel(const float4* sums, int n, float3* accel) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) accel[i] = make_float3(sums[i].x, sums[i].y, sums[i].z);
}

// chunk_bodies: bodies j per block (a multiple of the tile); smaller chunks, more blocks.
inline void nbody_accel_symmetric(const float4* d_pos_mass, int n, float softening2, float3* d_accel,
                                  cudaStream_t stream, int chunk_bodies) {
  static float4* sums = nullptr;
  if (sums == nullptr) cudaMalloc(&sums, sizeof(float4) * (1 << 18));
  cudaMemsetAsync(sums, 0, sizeof(float4) * size_t(n), stream);
  const int groups = (n + group - 1) / group;
  const int chunks = (n + chunk_bodies - 1) / chunk_bodies;  // at most, for group 0
  pairs_kernel<<<dim3(chunks + 1, groups), threads, 0, stream>>>(d_pos_mass, n, softening2, sums, chunk_bodies);
  to_float3_kernel<<<(n + 255) / 256, 256, 0, stream>>>(sums, n, d_accel);
}

}  // namespace symmetric
