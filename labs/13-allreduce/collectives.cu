// Lab 13, part 3 starter: the all-reduce's two halves on their own, written as the part 1
// starter writes them, in the style of the chapter's multi-GPU programs: the array split into
// equal parts, one per GPU, and synchronous cudaMemcpyPeer copies, one GPU after another.
//   ring_reduce_scatter: GPU r fetches part r of every other GPU's array and adds it into
//     its own part r;
//   ring_allgather: GPU r fetches every other part from the GPU that owns it.
//
// Its parts are not the contract's slices for some n (compare the cases that fail with those
// that pass), and once they are, it is slow for the part 1 starter's reasons: every copy waits
// for the one before it, so only one direction of one link is busy at a time.
#include "allreduce.h"

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

// GPU r adds part r of every other GPU's array into its own part r.
void reduce_part(float* const* data, int gpus, int r, size_t part) {
  const size_t bytes = part * sizeof(float);
  cudaSetDevice(r);
  float* incoming = nullptr;  // on GPU r: one peer's part at a time
  cudaMalloc(&incoming, bytes);
  for (int peer = 0; peer < gpus; ++peer) {
    if (peer == r) continue;
    cudaMemcpyPeer(incoming, r, data[peer] + r * part, peer, bytes);
    add_into_kernel<<<grid_for(r), threads_per_block>>>(data[r] + r * part, incoming, part);
  }
  cudaDeviceSynchronize();
  cudaFree(incoming);
}

}  // namespace

extern "C" void ring_reduce_scatter(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                                    float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                                    int gpus, size_t n, cudaStream_t /*stream*/) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || n == 0) return;  // one GPU already holds the sum of one array
  const size_t part = n / gpus;    // equal parts, one per GPU
  for (int r = 0; r < gpus; ++r) reduce_part(data, gpus, r, part);
  cudaSetDevice(0);
}

extern "C" void ring_allgather(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t /*stream*/) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || n == 0) return;  // one GPU already holds every part
  const size_t part = n / gpus;
  for (int r = 0; r < gpus; ++r)
    for (int owner = 0; owner < gpus; ++owner)
      if (owner != r) cudaMemcpyPeer(data[r] + owner * part, r, data[owner] + owner * part, owner, part * sizeof(float));
  cudaSetDevice(0);
}
