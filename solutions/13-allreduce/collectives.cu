// Lab 13 reference, part 3: reduce-scatter and all-gather, each GPU reading its peers' buffers
// directly over NVLink (no copy engine, no staging buffer). They are also the two phases of the
// reference all-reduce (allreduce.cu), which runs them with one barrier between them.
//
//   Reduce-scatter. GPU r reads slice r from every GPU, adds the values in GPU order 0, 1, ...,
//   and writes the sum into slice r of its own buffer. No GPU writes what another reads.
//   All-gather. GPU r copies slice s from GPU s for every s != r. No GPU writes what another
//   reads either.
//
// Each GPU receives (g-1)/g of the array in each, the least either can move, and every link
// carries traffic in both directions at once. On two GPUs this is exactly the ring; with more,
// it is the ring's g-1 steps done as one, which needs a direct link (NVLink or NVSwitch)
// between every pair. Slices are the contract's (ceil(n / g) floats, the last ones shorter);
// inside each, the floats at which every GPU's pointer is 16-byte aligned are moved as float4s
// and the few before and after them as floats, so unaligned pointers and any n keep the wide
// loads.
#include "allreduce.h"

#include <cstdint>

namespace {

constexpr int threads_per_block = 256;
constexpr int unroll = 4;         // independent loads in flight per thread: hides NVLink latency
constexpr int blocks_per_sm = 8;  // 2048 resident threads per SM on Hopper

template <class V>
struct PeerArrays {
  V* gpu[allreduce_max_gpus];
};

__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ float4 add(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

__host__ __device__ inline size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

// One slice [begin, end) in floats: a body of float4s from body_begin, aligned on every GPU,
// and the edges, the floats before and after it (the whole slice where there is no body).
struct SliceParts {
  size_t begin = 0, end = 0;
  size_t body_begin = 0;
  size_t body_vectors = 0;
  __host__ __device__ size_t count() const { return end - begin; }
  __host__ __device__ size_t edge_count() const { return count() - 4 * body_vectors; }
  // Edge element k: the head's first, then the tail's.
  __host__ __device__ size_t edge_index(size_t k) const {
    const size_t head = body_begin - begin;
    return k < head ? begin + k : begin + k + 4 * body_vectors;
  }
};

// Every GPU's slice, and how to move it.
struct SliceTable {
  SliceParts slice[allreduce_max_gpus];
};

// Sums element k < count (at index index_of(k), in units of V) of every GPU's array, in GPU
// order, into the owner's. Each thread issues `unroll` loads per GPU before it adds anything.
template <class V, class IndexOf>
__device__ void reduce_elements(const PeerArrays<V>& arrays, int gpus, int owner, size_t count, IndexOf index_of) {
  const size_t stride = size_t(gridDim.x) * blockDim.x * unroll;
  for (size_t base = size_t(blockIdx.x) * blockDim.x * unroll + threadIdx.x; base < count; base += stride) {
    V sum[unroll] = {};
    size_t index[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const size_t k = base + size_t(u) * blockDim.x;
      index[u] = index_of(k);
      if (k < count) sum[u] = arrays.gpu[0][index[u]];
    }
    for (int g = 1; g < gpus; ++g) {
#pragma unroll
      for (int u = 0; u < unroll; ++u)
        if (base + size_t(u) * blockDim.x < count) sum[u] = add(sum[u], arrays.gpu[g][index[u]]);
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u)
      if (base + size_t(u) * blockDim.x < count) arrays.gpu[owner][index[u]] = sum[u];
  }
}

// Copies element k < count (at index index_of(k), in units of V) from `from` to `to`, `unroll`
// loads in flight per thread.
template <class V, class IndexOf>
__device__ void copy_elements(const V* from, V* to, size_t count, IndexOf index_of, unsigned block, unsigned blocks) {
  const size_t stride = size_t(blocks) * blockDim.x * unroll;
  for (size_t base = size_t(block) * blockDim.x * unroll + threadIdx.x; base < count; base += stride) {
    V value[unroll] = {};
    size_t index[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const size_t k = base + size_t(u) * blockDim.x;
      index[u] = index_of(k);
      if (k < count) value[u] = from[index[u]];
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u)
      if (base + size_t(u) * blockDim.x < count) to[index[u]] = value[u];
  }
}

struct Identity {
  __device__ size_t operator()(size_t k) const { return k; }
};

struct EdgeOf {
  SliceParts parts;
  __device__ size_t operator()(size_t k) const { return parts.edge_index(k); }
};

// Reduce-scatter on GPU `owner`: its slice of every GPU, summed in GPU order, into its buffer.
__global__ void reduce_own_slice_kernel(PeerArrays<float> arrays, int gpus, int owner, SliceParts parts) {
  PeerArrays<float4> body{};
  for (int g = 0; g < gpus; ++g) body.gpu[g] = reinterpret_cast<float4*>(arrays.gpu[g] + parts.body_begin);
  reduce_elements(body, gpus, owner, parts.body_vectors, Identity{});
  reduce_elements(arrays, gpus, owner, parts.edge_count(), EdgeOf{parts});
}

// All-gather on GPU `owner`: blockIdx.y picks one of the other GPUs, whose slice the blocks of
// that row copy from it into the owner's buffer.
__global__ void gather_peer_slices_kernel(PeerArrays<float> arrays, int owner, SliceTable table) {
  const int source = int(blockIdx.y) < owner ? int(blockIdx.y) : int(blockIdx.y) + 1;
  const SliceParts parts = table.slice[source];
  const float* from = arrays.gpu[source];
  float* to = arrays.gpu[owner];
  copy_elements(reinterpret_cast<const float4*>(from + parts.body_begin), reinterpret_cast<float4*>(to + parts.body_begin),
                parts.body_vectors, Identity{}, blockIdx.x, gridDim.x);
  copy_elements(from, to, parts.edge_count(), EdgeOf{parts}, blockIdx.x, gridDim.x);
}

// Streams and events kept between calls, one set per GPU.
struct GpuQueue {
  cudaStream_t stream = nullptr;
  cudaEvent_t reduced = nullptr;  // this GPU's part of the phase before a barrier is done
  cudaEvent_t done = nullptr;     // this GPU's part of the call is done
  int sm_count = 0;
  bool peer_open[allreduce_max_gpus] = {};  // this GPU may read that one's cudaMalloc memory
};

struct Queues {
  int ready = 0;                // GPUs 0..ready-1 are set up
  cudaEvent_t start = nullptr;  // on GPU 0: the caller's stream has reached the call
  GpuQueue gpu[allreduce_max_gpus];
};

Queues queues;

// Opens `gpu` to each peer once. Enabling a pair twice fails with
// cudaErrorPeerAccessAlreadyEnabled, which would linger as the last error (and fail the call
// when the caller checks cudaGetLastError), so that one error is consumed.
void enable_peer_access(int gpu, int gpus, bool (&open)[allreduce_max_gpus]) {
  for (int peer = 0; peer < gpus; ++peer) {
    int can_access = 0;
    if (peer == gpu || open[peer]) continue;
    if (cudaDeviceCanAccessPeer(&can_access, gpu, peer) != cudaSuccess || !can_access) continue;
    if (cudaDeviceEnablePeerAccess(peer, 0) == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
    open[peer] = true;
  }
}

// Sets up GPUs up to `gpus` the first time they are used (the caller restores device 0).
void set_up(int gpus) {
  if (queues.start == nullptr) cudaEventCreateWithFlags(&queues.start, cudaEventDisableTiming);
  for (int gpu = 0; gpu < gpus; ++gpu) {
    cudaSetDevice(gpu);
    GpuQueue& q = queues.gpu[gpu];
    enable_peer_access(gpu, gpus, q.peer_open);
    if (gpu < queues.ready) continue;
    cudaStreamCreateWithFlags(&q.stream, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&q.reduced, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&q.done, cudaEventDisableTiming);
    cudaDeviceGetAttribute(&q.sm_count, cudaDevAttrMultiProcessorCount, gpu);
  }
  if (gpus > queues.ready) queues.ready = gpus;
}

int grid_for(size_t units, size_t sm_count) {
  const size_t per_block = size_t(threads_per_block) * unroll;
  const size_t blocks = min_size((units + per_block - 1) / per_block, sm_count * blocks_per_sm);
  return int(blocks > 0 ? blocks : 1);
}

// The contract's slices of n floats over `gpus` GPUs, each split into its float4 body and
// edges. The body is where every GPU's pointer + index is 16-byte aligned; pointers whose
// addresses differ modulo 16 have none (then every slice is moved as floats).
SliceTable slices_for(float* const* data, int gpus, size_t n) {
  const std::uintptr_t misalignment = reinterpret_cast<std::uintptr_t>(data[0]) % sizeof(float4);
  bool vectors = misalignment % sizeof(float) == 0;
  for (int g = 1; g < gpus; ++g)
    vectors = vectors && reinterpret_cast<std::uintptr_t>(data[g]) % sizeof(float4) == misalignment;
  const size_t aligned_phase = ((sizeof(float4) - misalignment) % sizeof(float4)) / sizeof(float);  // index % 4 there
  const size_t per = (n + size_t(gpus) - 1) / size_t(gpus);
  SliceTable table{};
  for (int g = 0; g < gpus; ++g) {
    SliceParts& p = table.slice[g];
    p.begin = min_size(size_t(g) * per, n);
    p.end = min_size(size_t(g + 1) * per, n);
    p.body_begin = p.begin;
    const size_t first = p.begin + (aligned_phase + 4 - p.begin % 4) % 4;
    if (vectors && first < p.end && (p.end - first) / 4 > 0) {
      p.body_begin = first;
      p.body_vectors = (p.end - first) / 4;
    }
  }
  return table;
}

PeerArrays<float> arrays_of(float* const* data, int gpus) {
  PeerArrays<float> arrays{};
  for (int g = 0; g < gpus; ++g) arrays.gpu[g] = data[g];
  return arrays;
}

}  // namespace

// The phases, shared with allreduce.cu (which declares them again: a student file includes
// only the contract). Each leaves device 0 current.
namespace peer_phases {

// Every GPU's stream starts after the caller's stream has reached this point, and after every
// GPU finished the previous call (whose reads of a slice this call may overwrite).
void start(int gpus, cudaStream_t stream) {
  set_up(gpus);
  cudaSetDevice(0);
  cudaEventRecord(queues.start, stream);
  for (int gpu = 0; gpu < gpus; ++gpu) {
    const GpuQueue& q = queues.gpu[gpu];
    cudaSetDevice(gpu);
    cudaStreamWaitEvent(q.stream, queues.start, 0);
    for (int peer = 0; peer < gpus; ++peer)
      if (peer != gpu) cudaStreamWaitEvent(q.stream, queues.gpu[peer].done, 0);
  }
  cudaSetDevice(0);
}

void reduce_scatter(float* const* data, int gpus, size_t n) {
  const SliceTable table = slices_for(data, gpus, n);
  const PeerArrays<float> arrays = arrays_of(data, gpus);
  for (int gpu = 0; gpu < gpus; ++gpu) {
    const SliceParts& parts = table.slice[gpu];
    if (parts.count() == 0) continue;
    const GpuQueue& q = queues.gpu[gpu];
    cudaSetDevice(gpu);
    const int blocks = grid_for(parts.body_vectors > 0 ? parts.body_vectors : parts.count(), size_t(q.sm_count));
    reduce_own_slice_kernel<<<blocks, threads_per_block, 0, q.stream>>>(arrays, gpus, gpu, parts);
  }
  cudaSetDevice(0);
}

// Each GPU's stream waits for every other GPU's work so far: the all-gather after it reads
// their finished slices, and overwrites slices of its own buffer that they were reading.
void barrier(int gpus) {
  for (int gpu = 0; gpu < gpus; ++gpu) {
    cudaSetDevice(gpu);
    cudaEventRecord(queues.gpu[gpu].reduced, queues.gpu[gpu].stream);
  }
  for (int gpu = 0; gpu < gpus; ++gpu) {
    cudaSetDevice(gpu);
    for (int peer = 0; peer < gpus; ++peer)
      if (peer != gpu) cudaStreamWaitEvent(queues.gpu[gpu].stream, queues.gpu[peer].reduced, 0);
  }
  cudaSetDevice(0);
}

void allgather(float* const* data, int gpus, size_t n) {
  const SliceTable table = slices_for(data, gpus, n);
  const PeerArrays<float> arrays = arrays_of(data, gpus);
  for (int gpu = 0; gpu < gpus; ++gpu) {
    if (n - table.slice[gpu].count() == 0) continue;  // nothing to fetch
    const GpuQueue& q = queues.gpu[gpu];
    const SliceParts& widest = table.slice[0];  // slice 0 is never shorter than another
    const size_t units = widest.body_vectors > 0 ? widest.body_vectors : widest.count();
    const int per_peer = grid_for(units, (size_t(q.sm_count) + size_t(gpus) - 2) / size_t(gpus - 1));
    cudaSetDevice(gpu);
    gather_peer_slices_kernel<<<dim3(unsigned(per_peer), unsigned(gpus - 1)), threads_per_block, 0, q.stream>>>(
        arrays, gpu, table);
  }
  cudaSetDevice(0);
}

// The caller's stream waits for every GPU's work, so that work it enqueues next sees it.
void finish(int gpus, cudaStream_t stream) {
  for (int gpu = 0; gpu < gpus; ++gpu) {
    cudaSetDevice(gpu);
    cudaEventRecord(queues.gpu[gpu].done, queues.gpu[gpu].stream);
  }
  cudaSetDevice(0);
  for (int gpu = 0; gpu < gpus; ++gpu) cudaStreamWaitEvent(stream, queues.gpu[gpu].done, 0);
}

}  // namespace peer_phases

extern "C" void ring_reduce_scatter(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                                    float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                                    int gpus, size_t n, cudaStream_t stream) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || gpus > allreduce_max_gpus || n == 0) return;  // one GPU: its array is the sum
  peer_phases::start(gpus, stream);
  peer_phases::reduce_scatter(data, gpus, n);
  peer_phases::finish(gpus, stream);
}

extern "C" void ring_allgather(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t stream) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || gpus > allreduce_max_gpus || n == 0) return;  // one GPU holds every slice
  peer_phases::start(gpus, stream);
  peer_phases::allgather(data, gpus, n);
  peer_phases::finish(gpus, stream);
}
