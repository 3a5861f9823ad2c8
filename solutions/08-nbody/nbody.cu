// Lab 08 reference solution: all-pairs accelerations, compute bound.
//
// Up to 2^16 bodies (exclusive), what changed from the chapter's tiled kernel (one body per
// thread, 256-body tiles), and why it is faster:
//   1. Four bodies i per thread. Each body j read from the tile (one 16-byte broadcast load)
//      serves four interactions instead of one, and the four are independent, so a warp has
//      instruction-level parallelism to hide the latency of the dependent chain
//      d -> r^2 -> rsqrt -> m / r^3 -> a.
//   2. One MUFU.RSQ per interaction, nothing around it: rsqrtf() without -ftz wraps it in
//      instructions that rescale denormal inputs, and r^2 >= softening2 >= 1e-12 never is one.
//   3. 13 instructions per interaction: 3 FADD (d), 3 FFMA (r^2, softening folded into the
//      first), 1 MUFU (1/r), 3 FMUL (m/r^3), 3 FFMA (a += d * m/r^3). The loop over a tile is
//      unrolled, so loads use immediate offsets and the loop costs nearly nothing.
//   4. A grid that fills the GPU for every n: when there are fewer bodies than the GPU has
//      thread slots (2^14 bodies are 4096 threads at four per thread), the j-range is split
//      among several blocks per group of bodies, which add their partial sums with atomics,
//      and the split is chosen so that every SM gets the same work.
//   5. The last tile is padded with zero-mass bodies, so no thread reads past n and the inner
//      loop needs no bounds check: a zero mass contributes exactly zero.
// That kernel is bound by instruction issue: 12 FP32 instructions and a MUFU per interaction
// cap it at 12/13 of the FP32 peak's instruction rate, and no tuning moves it far from where it
// is (H100: 2, 4 or 8 bodies per thread, 64 to 256 threads, unroll 4 to 16 all land within a
// couple of points of each other; the runs: docs/design/08-nbody.md).
//
// From 2^16 bodies on, each pair is computed once (Newton's third law: the pull of i on j is
// minus m_i/m_j times that of j on i), which halves the arithmetic:
//   6. Block (c, g) takes the 1024 bodies i of group g (8 per thread) against chunk c of the
//      bodies j after the group; chunk 0 is the group against itself, computed one way as
//      above. Per pair: 3 FADD, 3 FFMA (r^2), MUFU, 2 FMUL (1/r^3), 2 FMUL (m_j/r^3 and
//      m_i/r^3), 3 FFMA into a_i and 3 FFMA into the pull on j summed over the thread's 8
//      bodies: 17 instructions for two interactions, about 9 per interaction with the rest.
//   7. The pull on the bodies j is summed across threads without atomics: at step s thread t
//      pairs its bodies with body (t + s) mod 128 of the tile, so the 32 lanes of a warp touch
//      32 different bodies, and each warp adds into its own copy of the tile's sums in shared
//      memory (one LDS.128, 3 FADD, one STS.128 per step, a __syncwarp between steps). At the
//      end of the tile the four copies are added and sent to a float4 scratch array with one
//      vector atomic (red.global.add.v4.f32) per body, in scratch memory allocated once per
//      device and kept between calls; a last kernel writes the float3 output.
// From 2^16 on that beats the one-way kernel; below 2^16 the pairs do not fill the GPU and the
// one-way kernel is kept (the measurements: docs/design/08-nbody.md).
#include "nbody.h"

namespace {

// Measured on an H100 (see the header): 128 threads, 4 bodies per thread, 4 blocks per SM.
template <int Threads, int BodiesPerThread, int Unroll, int MinBlocksPerSm>
struct NbodyTuning {
  static constexpr int threads_per_block = Threads;
  static constexpr int bodies_per_thread = BodiesPerThread;
  static constexpr int bodies_per_block = Threads * BodiesPerThread;  // bodies i per block
  static constexpr int tile_bodies = Threads;  // each thread loads one body j of the tile
  // A partial unroll: the fully unrolled 128-body tile would be ~7000 instructions (over
  // 100 KB of code per loop trip), more than the instruction caches near the SM hold.
  static constexpr int tile_unroll = Unroll;
  static constexpr int min_blocks_per_sm = MinBlocksPerSm;  // 4 x 128 threads: at most 128 registers
  static_assert(tile_bodies % tile_unroll == 0, "the unrolled loop must cover the tile exactly");
};

using Tuning = NbodyTuning<128, 4, 8, 4>;

// 1/sqrt(x) as one MUFU.RSQ (about 2 ulp). x is a normal float here, so flushing denormals
// changes nothing, and it saves the rescaling that plain rsqrtf() emits around it.
__device__ __forceinline__ float rsqrt_ftz(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// acc += m_j (p_j - p_i) / (|p_j - p_i|^2 + softening2)^(3/2)
__device__ __forceinline__ void add_interaction(float3& acc, const float3& me, const float4& other, float softening2) {
  const float dx = other.x - me.x;
  const float dy = other.y - me.y;
  const float dz = other.z - me.z;
  const float r2 = fmaf(dz, dz, fmaf(dy, dy, fmaf(dx, dx, softening2)));
  const float inv_r = rsqrt_ftz(r2);
  const float inv_r2 = inv_r * inv_r;
  const float s = (other.w * inv_r) * inv_r2;  // m / r^3; the two products are independent
  acc.x = fmaf(dx, s, acc.x);
  acc.y = fmaf(dy, s, acc.y);
  acc.z = fmaf(dz, s, acc.z);
}

// Block (bx, by) computes bodies i of [bx * 512, bx * 512 + 512) against bodies j of
// [by * j_per_split, (by + 1) * j_per_split). Thread t owns bodies bx * 512 + t + k * 128,
// k = 0..3, so that loads and stores of neighbouring threads are neighbours in memory. With
// `kAccumulate` the block adds its partial sums to d_accel (zeroed first) with atomics;
// without it there is one split and it stores them.
template <class T, bool kAccumulate>
__global__ void __launch_bounds__(T::threads_per_block, T::min_blocks_per_sm)
    nbody_register_tiled_kernel(const float4* __restrict__ pos_mass, int n, float softening2,
                                float* __restrict__ accel, int j_per_split) {
  constexpr int threads_per_block = T::threads_per_block, bodies_per_thread = T::bodies_per_thread;
  constexpr int bodies_per_block = T::bodies_per_block, tile_bodies = T::tile_bodies;
  __shared__ float4 tile[tile_bodies];

  const int first_i = blockIdx.x * bodies_per_block + threadIdx.x;
  float3 me[bodies_per_thread];
  float3 acc[bodies_per_thread];
#pragma unroll
  for (int k = 0; k < bodies_per_thread; ++k) {
    const int i = first_i + k * threads_per_block;
    const float4 p = i < n ? pos_mass[i] : make_float4(0.f, 0.f, 0.f, 0.f);  // i >= n: computed, never stored
    me[k] = make_float3(p.x, p.y, p.z);
    acc[k] = make_float3(0.f, 0.f, 0.f);
  }

  const int j_begin = blockIdx.y * j_per_split;
  const int j_end = min(n, j_begin + j_per_split);
  for (int tile_start = j_begin; tile_start < j_end; tile_start += tile_bodies) {
    const int j = tile_start + threadIdx.x;
    // Past the end of the range: a body of zero mass at the origin, which adds exactly zero.
    tile[threadIdx.x] = j < j_end ? pos_mass[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();  // the tile is complete

#pragma unroll T::tile_unroll
    for (int jj = 0; jj < tile_bodies; ++jj) {
      const float4 other = tile[jj];  // the same address for the whole warp: a broadcast
#pragma unroll
      for (int k = 0; k < bodies_per_thread; ++k) add_interaction(acc[k], me[k], other, softening2);
    }
    __syncthreads();  // nobody still reads the tile when the next one overwrites it
  }

#pragma unroll
  for (int k = 0; k < bodies_per_thread; ++k) {
    const int i = first_i + k * threads_per_block;
    if (i >= n) continue;
    float* out = accel + 3 * size_t(i);
    if (kAccumulate) {
      atomicAdd(out + 0, acc[k].x);
      atomicAdd(out + 1, acc[k].y);
      atomicAdd(out + 2, acc[k].z);
    } else {
      out[0] = acc[k].x;
      out[1] = acc[k].y;
      out[2] = acc[k].z;
    }
  }
}

// ---- each pair once (n >= pairs_once_min_bodies) ------------------------------------------

struct PairsOnce {
  static constexpr int threads_per_block = 128;
  static constexpr int bodies_per_thread = 8;
  static constexpr int group_bodies = threads_per_block * bodies_per_thread;  // bodies i per block
  static constexpr int tile_bodies = threads_per_block;                       // bodies j per tile
  static constexpr int warps = threads_per_block / 32;
  static constexpr int chunk_bodies = 1024;  // bodies j per block: the fastest of 1024, 4096, 16384 on the H100
  static constexpr int min_blocks_per_sm = 3;
  static_assert(chunk_bodies % tile_bodies == 0, "a chunk is whole tiles");
  static_assert((tile_bodies & (tile_bodies - 1)) == 0, "the step's rotation wraps with a mask");
};

constexpr int pairs_once_min_bodies = 1 << 16;

// One vector reduction on Hopper and later; before sm_90 (the portable build) three scalar ones.
__device__ __forceinline__ void add_vector_atomic(float4* p, float x, float y, float z) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  atomicAdd(&p->x, x);
  atomicAdd(&p->y, y);
  atomicAdd(&p->z, z);
#else
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x), "f"(y), "f"(z), "f"(0.f)
               : "memory");
#endif
}

// Block (c, g): the bodies i of group g against bodies j of chunk c - 1 after the group
// (each pair once, both sums), or for c = 0 against the group itself (one way). Adds into
// `sums` (zeroed first), one float4 per body.
__global__ void __launch_bounds__(PairsOnce::threads_per_block, PairsOnce::min_blocks_per_sm)
    nbody_pairs_once_kernel(const float4* __restrict__ pos_mass, int n, float softening2, float4* __restrict__ sums) {
  using P = PairsOnce;
  __shared__ float4 tile[P::tile_bodies];
  __shared__ float4 pull[P::warps][P::tile_bodies];  // per warp: the pull on each body j of the tile

  const int group_begin = blockIdx.y * P::group_bodies;
  const bool own_group = blockIdx.x == 0;
  const int j_begin = own_group ? group_begin : group_begin + P::group_bodies + (blockIdx.x - 1) * P::chunk_bodies;
  const int j_end = min(n, own_group ? group_begin + P::group_bodies : j_begin + P::chunk_bodies);
  if (j_begin >= j_end) return;  // the grid is a rectangle; later groups have fewer chunks

  float4 me[P::bodies_per_thread];  // position and mass: the mass pulls on the bodies j
  float3 acc[P::bodies_per_thread];
#pragma unroll
  for (int k = 0; k < P::bodies_per_thread; ++k) {
    const int i = group_begin + threadIdx.x + k * P::threads_per_block;
    me[k] = i < n ? pos_mass[i] : make_float4(0.f, 0.f, 0.f, 0.f);  // mass 0: pulls on nothing
    acc[k] = make_float3(0.f, 0.f, 0.f);
  }
  const int warp = threadIdx.x / 32;

  for (int tile_start = j_begin; tile_start < j_end; tile_start += P::tile_bodies) {
    const int j = tile_start + threadIdx.x;
    tile[threadIdx.x] = j < j_end ? pos_mass[j] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < P::warps; ++w) pull[w][threadIdx.x] = make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    if (own_group) {
#pragma unroll 4
      for (int jj = 0; jj < P::tile_bodies; ++jj) {
        const float4 other = tile[jj];
#pragma unroll
        for (int k = 0; k < P::bodies_per_thread; ++k)
          add_interaction(acc[k], make_float3(me[k].x, me[k].y, me[k].z), other, softening2);
      }
    } else {
#pragma unroll 2
      for (int step = 0; step < P::tile_bodies; ++step) {
        const int jj = (threadIdx.x + step) & (P::tile_bodies - 1);  // 32 different bodies per warp
        const float4 other = tile[jj];
        float px = 0.f, py = 0.f, pz = 0.f;  // sum over this thread's bodies of m_i d / r^3
#pragma unroll
        for (int k = 0; k < P::bodies_per_thread; ++k) {
          const float dx = other.x - me[k].x, dy = other.y - me[k].y, dz = other.z - me[k].z;
          const float r2 = fmaf(dz, dz, fmaf(dy, dy, fmaf(dx, dx, softening2)));
          const float inv_r = rsqrt_ftz(r2);
          const float inv_r3 = inv_r * (inv_r * inv_r);
          const float on_i = other.w * inv_r3, on_j = me[k].w * inv_r3;
          acc[k].x = fmaf(dx, on_i, acc[k].x);
          acc[k].y = fmaf(dy, on_i, acc[k].y);
          acc[k].z = fmaf(dz, on_i, acc[k].z);
          px = fmaf(dx, on_j, px);
          py = fmaf(dy, on_j, py);
          pz = fmaf(dz, on_j, pz);
        }
        float4 p = pull[warp][jj];  // d points from i to j: the pull on j is -d
        p.x -= px, p.y -= py, p.z -= pz;
        pull[warp][jj] = p;
        __syncwarp();  // the next step's body jj belongs to another lane of this warp
      }
    }
    __syncthreads();
    if (!own_group && j < j_end) {
      float x = 0.f, y = 0.f, z = 0.f;
#pragma unroll
      for (int w = 0; w < P::warps; ++w) {
        const float4 p = pull[w][threadIdx.x];
        x += p.x, y += p.y, z += p.z;
      }
      add_vector_atomic(sums + j, x, y, z);
    }
    __syncthreads();  // nobody still reads the tile or the sums when the next tile overwrites them
  }
#pragma unroll
  for (int k = 0; k < P::bodies_per_thread; ++k) {
    const int i = group_begin + threadIdx.x + k * P::threads_per_block;
    if (i < n) add_vector_atomic(sums + i, acc[k].x, acc[k].y, acc[k].z);
  }
}

__global__ void float4_to_float3_kernel(const float4* __restrict__ sums, int n, float3* __restrict__ accel) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) accel[i] = make_float3(sums[i].x, sums[i].y, sums[i].z);
}

// The float4 sums, NBODY_MAX_BODIES of them, allocated on the first call on each device and
// kept: allocated per call (cudaMallocAsync), it cost time the events did not show, since the
// pool handed its memory back between calls (docs/design/08-nbody.md). Null when it cannot be
// had.
float4* pairs_scratch() {
  constexpr int max_devices = 64;
  static float4* scratch[max_devices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= max_devices) return nullptr;
  if (scratch[device] == nullptr && cudaMalloc(&scratch[device], sizeof(float4) * NBODY_MAX_BODIES) != cudaSuccess) {
    cudaGetLastError();  // clear it: the caller falls back to the one-way kernel
    scratch[device] = nullptr;
  }
  return scratch[device];
}

// False when the scratch array cannot be had (the caller falls back to the one-way kernel).
bool launch_pairs_once(const float4* d_pos_mass, int n, float softening2, float3* d_accel, cudaStream_t stream) {
  using P = PairsOnce;
  float4* sums = pairs_scratch();
  if (sums == nullptr) return false;
  cudaMemsetAsync(sums, 0, sizeof(float4) * size_t(n), stream);
  const int groups = (n + P::group_bodies - 1) / P::group_bodies;
  const int chunks = (n - P::group_bodies + P::chunk_bodies - 1) / P::chunk_bodies;  // group 0 has the most
  nbody_pairs_once_kernel<<<dim3(chunks + 1, groups), P::threads_per_block, 0, stream>>>(d_pos_mass, n, softening2,
                                                                                         sums);
  float4_to_float3_kernel<<<(n + 255) / 256, 256, 0, stream>>>(sums, n, d_accel);
  return true;
}

// ---- grid of the one-way kernel ------------------------------------------------------------

// The SMs, and how many blocks of this kernel each one runs at once (found once per process).
struct GpuShape {
  int sm_count = 1;
  int blocks_per_sm = 1;
};

template <class T>
const GpuShape& gpu_shape() {
  static const GpuShape shape = [] {
    GpuShape s;
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&s.sm_count, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s.blocks_per_sm, nbody_register_tiled_kernel<T, true>,
                                                  T::threads_per_block, 0);
    if (s.sm_count < 1) s.sm_count = 1;
    if (s.blocks_per_sm < 1) s.blocks_per_sm = 1;
    return s;
  }();
  return shape;
}

struct Grid {
  int i_blocks = 1;
  int splits = 1;       // blocks sharing one group of bodies i, each with its own j-range
  int j_per_split = 0;  // a multiple of the tile
};

template <class T>
Grid grid_with_splits(int n, int wanted_splits) {
  Grid g;
  g.i_blocks = (n + T::bodies_per_block - 1) / T::bodies_per_block;
  const int tiles = (n + T::tile_bodies - 1) / T::tile_bodies;
  const int tiles_per_split = (tiles + wanted_splits - 1) / wanted_splits;
  g.j_per_split = tiles_per_split * T::tile_bodies;
  g.splits = (n + g.j_per_split - 1) / g.j_per_split;  // no split left empty
  return g;
}

// All blocks run at once (one wave), so the time is set by the busiest SM: the number of
// blocks it holds, ceil(blocks / SMs), times the tiles each block computes. Among the j-splits
// that keep the grid within one wave, take the one with the least such work, and on a tie the
// one with more blocks (more warps to hide latency). At n = 2^18 there are 512 groups of
// bodies i and no split; at 2^14 only 32 groups, each split 16 ways: 512 blocks.
template <class T>
Grid choose_grid(int n) {
  const GpuShape& gpu = gpu_shape<T>();
  const int resident = gpu.sm_count * gpu.blocks_per_sm;
  const int tiles = (n + T::tile_bodies - 1) / T::tile_bodies;
  Grid best = grid_with_splits<T>(n, 1);
  long long best_cost = -1;
  for (int wanted = 1; wanted <= tiles; ++wanted) {
    const Grid g = grid_with_splits<T>(n, wanted);
    const long long blocks = (long long)g.i_blocks * g.splits;
    if (blocks > resident && wanted > 1) break;  // past one wave (more splits only add blocks)
    const long long busiest_sm_blocks = (blocks + gpu.sm_count - 1) / gpu.sm_count;
    const long long cost = busiest_sm_blocks * (g.j_per_split / T::tile_bodies);
    if (best_cost < 0 || cost < best_cost ||
        (cost == best_cost && blocks > (long long)best.i_blocks * best.splits)) {
      best = g;
      best_cost = cost;
    }
  }
  return best;
}

template <class T>
void launch_nbody(const float4* d_pos_mass, int n, float softening2, float3* d_accel, cudaStream_t stream) {
  const Grid g = choose_grid<T>(n);
  float* accel = reinterpret_cast<float*>(d_accel);
  if (g.splits == 1) {
    nbody_register_tiled_kernel<T, false><<<g.i_blocks, T::threads_per_block, 0, stream>>>(d_pos_mass, n, softening2,
                                                                                           accel, g.j_per_split);
    return;
  }
  cudaMemsetAsync(d_accel, 0, size_t(n) * sizeof(float3), stream);
  const dim3 grid(g.i_blocks, g.splits);
  nbody_register_tiled_kernel<T, true><<<grid, T::threads_per_block, 0, stream>>>(d_pos_mass, n, softening2, accel,
                                                                                  g.j_per_split);
}

}  // namespace

extern "C" void nbody_accel(const float4* d_pos_mass, int n, float softening2, float3* d_accel, cudaStream_t stream) {
  if (n <= 0) return;
  if (n >= pairs_once_min_bodies && launch_pairs_once(d_pos_mass, n, softening2, d_accel, stream)) return;
  launch_nbody<Tuning>(d_pos_mass, n, softening2, d_accel, stream);
}
