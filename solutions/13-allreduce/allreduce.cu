// Lab 13 reference: an all-reduce in two phases, each GPU reading its peers' buffers directly
// over NVLink (no copy engine, no staging buffer).
//
//   1. Reduce-scatter. The array is cut into one slice per GPU. GPU r reads slice r from
//      every GPU, adds the values in GPU order 0, 1, ..., and writes the sum into slice r of
//      its own buffer. No GPU writes what another reads in this phase.
//   2. All-gather. Once every GPU has finished phase 1 (cross-GPU events), GPU r copies
//      slice s from GPU s for every s != r.
//
// Each GPU receives (g-1)/g of the array in each phase: 2(g-1)/g of it in all, the least any
// all-reduce can move, and every link carries traffic in both directions at once. On two GPUs
// this is exactly the ring; with more, it is the ring's g-1 steps done as one, which needs a
// direct link (NVLink or NVSwitch) between every pair. Every element is summed once, in the
// same order, so all GPUs end with the same bits.
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

// `units` elements cut into contiguous slices of `per`, one per GPU; the last slices may be
// shorter, or empty when units < gpus.
struct Slicing {
  size_t units = 0;
  size_t per = 0;
  __host__ __device__ size_t begin(int gpu) const { return min_size(units, size_t(gpu) * per); }
  __host__ __device__ size_t end(int gpu) const { return min_size(units, size_t(gpu + 1) * per); }
  __host__ __device__ size_t count(int gpu) const { return end(gpu) - begin(gpu); }
};

Slicing slice(size_t units, int gpus) { return {units, (units + gpus - 1) / size_t(gpus)}; }

// Phase 1 on GPU `owner`: slice [begin, end) of every GPU, summed in GPU order, into the
// owner's own buffer. Each thread issues `unroll` loads per GPU before it adds anything.
template <class V>
__global__ void reduce_own_slice_kernel(PeerArrays<V> arrays, int gpus, int owner, size_t begin, size_t end) {
  const size_t stride = size_t(gridDim.x) * blockDim.x * unroll;
  for (size_t base = begin + size_t(blockIdx.x) * blockDim.x * unroll + threadIdx.x; base < end; base += stride) {
    V sum[unroll] = {};
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const size_t i = base + size_t(u) * blockDim.x;
      if (i < end) sum[u] = arrays.gpu[0][i];
    }
    for (int g = 1; g < gpus; ++g) {
#pragma unroll
      for (int u = 0; u < unroll; ++u) {
        const size_t i = base + size_t(u) * blockDim.x;
        if (i < end) sum[u] = add(sum[u], arrays.gpu[g][i]);
      }
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const size_t i = base + size_t(u) * blockDim.x;
      if (i < end) arrays.gpu[owner][i] = sum[u];
    }
  }
}

// Phase 2 on GPU `owner`: every element outside its own slice, read from the GPU that owns
// it. Index j runs over the elements the owner lacks; the owner's slice is skipped over.
template <class V>
__global__ void gather_peer_slices_kernel(PeerArrays<V> arrays, int owner, Slicing slicing) {
  const size_t own_begin = slicing.begin(owner);
  const size_t own_count = slicing.count(owner);
  const size_t missing = slicing.units - own_count;
  const size_t stride = size_t(gridDim.x) * blockDim.x * unroll;
  for (size_t base = size_t(blockIdx.x) * blockDim.x * unroll + threadIdx.x; base < missing; base += stride) {
    V value[unroll] = {};
    size_t index[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const size_t j = base + size_t(u) * blockDim.x;
      index[u] = j < own_begin ? j : j + own_count;
      if (j < missing) value[u] = arrays.gpu[index[u] / slicing.per][index[u]];
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u)
      if (base + size_t(u) * blockDim.x < missing) arrays.gpu[owner][index[u]] = value[u];
  }
}

// Streams and events kept between calls, one set per GPU.
struct GpuQueue {
  cudaStream_t stream = nullptr;
  cudaEvent_t reduced = nullptr;  // phase 1 done on this GPU
  cudaEvent_t done = nullptr;     // phase 2 done on this GPU
  int sm_count = 0;
  bool peer_open[allreduce_max_gpus] = {};  // this GPU may read that one's cudaMalloc memory
};

struct Queues {
  int ready = 0;             // GPUs 0..ready-1 are set up
  cudaEvent_t start = nullptr;  // on GPU 0: the caller's stream has reached the call
  GpuQueue gpu[allreduce_max_gpus];
};

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
Queues& queues_for(int gpus) {
  static Queues queues;
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
  cudaSetDevice(0);
  return queues;
}

int grid_for(size_t units, int sm_count) {
  const size_t per_block = size_t(threads_per_block) * unroll;
  return int(min_size((units + per_block - 1) / per_block, size_t(sm_count) * blocks_per_sm));
}

// The vector part (float4, when every pointer allows it) and the scalar rest of the array.
struct Layout {
  size_t vectors = 0;     // float4s from the start
  size_t tail_first = 0;  // first float not in a vector
  size_t tail = 0;
};

Layout layout_for(float* const* data, int gpus, size_t n) {
  bool aligned = true;
  for (int g = 0; g < gpus; ++g) aligned = aligned && reinterpret_cast<std::uintptr_t>(data[g]) % sizeof(float4) == 0;
  Layout layout;
  layout.vectors = aligned ? n / 4 : 0;
  layout.tail_first = layout.vectors * 4;
  layout.tail = n - layout.tail_first;
  return layout;
}

template <class V>
PeerArrays<V> arrays_at(float* const* data, int gpus, size_t first_float) {
  PeerArrays<V> arrays{};
  for (int g = 0; g < gpus; ++g) arrays.gpu[g] = reinterpret_cast<V*>(data[g] + first_float);
  return arrays;
}

template <class V>
void enqueue_reduce(const PeerArrays<V>& arrays, int gpus, int owner, const Slicing& slicing, const GpuQueue& q) {
  const size_t count = slicing.count(owner);
  if (count == 0) return;
  reduce_own_slice_kernel<V><<<grid_for(count, q.sm_count), threads_per_block, 0, q.stream>>>(
      arrays, gpus, owner, slicing.begin(owner), slicing.end(owner));
}

template <class V>
void enqueue_gather(const PeerArrays<V>& arrays, int owner, const Slicing& slicing, const GpuQueue& q) {
  const size_t missing = slicing.units - slicing.count(owner);
  if (missing == 0) return;
  gather_peer_slices_kernel<V><<<grid_for(missing, q.sm_count), threads_per_block, 0, q.stream>>>(
      arrays, owner, slicing);
}

}  // namespace

extern "C" void ring_allreduce(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t stream) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || gpus > allreduce_max_gpus || n == 0) return;  // one GPU: its array is the sum
  Queues& queues = queues_for(gpus);

  const Layout layout = layout_for(data, gpus, n);
  const Slicing vector_slices = slice(layout.vectors, gpus);
  const Slicing tail_slices = slice(layout.tail, gpus);
  const PeerArrays<float4> vectors = arrays_at<float4>(data, gpus, 0);
  const PeerArrays<float> tail = arrays_at<float>(data, gpus, layout.tail_first);

  // Phase 1 starts where the caller's stream is, and after every GPU finished the previous
  // call (its phase 2 may still read the slice this call's phase 1 overwrites).
  cudaEventRecord(queues.start, stream);
  for (int gpu = 0; gpu < gpus; ++gpu) {
    const GpuQueue& q = queues.gpu[gpu];
    cudaSetDevice(gpu);
    cudaStreamWaitEvent(q.stream, queues.start, 0);
    for (int peer = 0; peer < gpus; ++peer)
      if (peer != gpu) cudaStreamWaitEvent(q.stream, queues.gpu[peer].done, 0);
    enqueue_reduce(vectors, gpus, gpu, vector_slices, q);
    enqueue_reduce(tail, gpus, gpu, tail_slices, q);
    cudaEventRecord(q.reduced, q.stream);
  }
  // Phase 2 on each GPU waits for every GPU's phase 1: it reads their finished slices, and
  // overwrites slices of its own buffer that they were reading.
  for (int gpu = 0; gpu < gpus; ++gpu) {
    const GpuQueue& q = queues.gpu[gpu];
    cudaSetDevice(gpu);
    for (int peer = 0; peer < gpus; ++peer)
      if (peer != gpu) cudaStreamWaitEvent(q.stream, queues.gpu[peer].reduced, 0);
    enqueue_gather(vectors, gpu, vector_slices, q);
    enqueue_gather(tail, gpu, tail_slices, q);
    cudaEventRecord(q.done, q.stream);
  }
  // The caller's stream waits for all of it, so work it enqueues next sees the result.
  cudaSetDevice(0);
  for (int gpu = 0; gpu < gpus; ++gpu) cudaStreamWaitEvent(stream, queues.gpu[gpu].done, 0);
}
