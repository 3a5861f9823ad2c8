// The chapter's all-reduce, handed in honestly: the lab's starter with its split fixed, as the
// kit's calibration copy has it (grading/policy/chapter/13-allreduce/). The array is cut into
// one part of ceil(n / gpus) elements per GPU; GPU r fetches part r of every other GPU's array
// with cudaMemcpyPeer and adds it into its own, then every GPU fetches the parts it did not sum.
// One change: the buffer each GPU receives a peer's part in is kept between calls, not
// allocated and freed in every call, which the grader's clock would count and the host's not.
// The honest twin of fingerprint-cache-allreduce, which wraps this same code in a cache: what
// it earns is what that entry may earn with every defence on.
#include "allreduce.h"

#include <algorithm>

namespace {

constexpr int threads_per_block = 256;

__global__ void add_into_kernel(float* sum, const float* addend, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x)
    sum[i] += addend[i];
}

int grid_for(int gpu) {
  int sm_count = 0;
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, gpu);
  return 2 * sm_count;
}

// Part r of n elements: [begin, end), with parts of ceil(n / gpus) and the last ones shorter.
struct Part {
  size_t begin, end;
  size_t size() const { return end - begin; }
};

Part part_of(int r, int gpus, size_t n) {
  const size_t part = (n + gpus - 1) / gpus;
  const size_t begin = std::min(size_t(r) * part, n);
  return {begin, std::min(begin + part, n)};
}

// On GPU `gpu` (current): room for `count` floats, grown when a call needs more.
float* incoming_on(int gpu, size_t count) {
  static float* buffers[allreduce_max_gpus] = {};
  static size_t capacity[allreduce_max_gpus] = {};
  if (count > capacity[gpu]) {
    cudaFree(buffers[gpu]);
    cudaMalloc(&buffers[gpu], count * sizeof(float));
    capacity[gpu] = count;
  }
  return buffers[gpu];
}

// GPU r adds part r of every other GPU's array into its own part r. Each cudaMemcpyPeer waits
// for the work already queued on both GPUs, so the next copy into `incoming` waits for the add;
// the chapter's wait for the whole GPU at the end is kept.
void reduce_part(float* const* data, int gpus, int r, Part p) {
  cudaSetDevice(r);
  float* incoming = incoming_on(r, p.size());
  for (int peer = 0; peer < gpus; ++peer) {
    if (peer == r) continue;
    cudaMemcpyPeer(incoming, r, data[peer] + p.begin, peer, p.size() * sizeof(float));
    add_into_kernel<<<grid_for(r), threads_per_block>>>(data[r] + p.begin, incoming, p.size());
  }
  cudaDeviceSynchronize();
}

}  // namespace

extern "C" void ring_allreduce(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t /*stream*/) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || n == 0) return;  // one GPU already holds the sum of one array

  for (int r = 0; r < gpus; ++r) {
    const Part p = part_of(r, gpus, n);
    if (p.size() > 0) reduce_part(data, gpus, r, p);
  }
  // Every part is summed now: each GPU fetches the parts it did not sum.
  for (int r = 0; r < gpus; ++r)
    for (int owner = 0; owner < gpus; ++owner) {
      const Part p = part_of(owner, gpus, n);
      if (owner != r && p.size() > 0)
        cudaMemcpyPeer(data[r] + p.begin, r, data[owner] + p.begin, owner, p.size() * sizeof(float));
    }
  cudaSetDevice(0);
}
