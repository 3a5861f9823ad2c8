// Lab 13 starter: an all-reduce in the style of the chapter's multi-GPU programs. The array
// is split into equal parts, one per GPU, as the chapter splits its matrix; then, one GPU
// after another:
//   1. reduce: GPU r fetches part r of every other GPU's array with cudaMemcpyPeer and adds
//      it into its own part r;
//   2. gather: GPU r fetches every other part from the GPU that summed it.
//
// It is wrong for some n (compare the cases that fail with those that pass), and once right,
// slow: every copy waits for the one before it, so only one direction of one link is busy at
// a time. The README explains how to keep every link busy both ways.
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

extern "C" void ring_allreduce(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t /*stream*/) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || n == 0) return;  // one GPU already holds the sum of one array
  const size_t part = n / gpus;    // equal parts, one per GPU

  for (int r = 0; r < gpus; ++r) reduce_part(data, gpus, r, part);
  // Every part is summed now: each GPU fetches the parts it did not sum.
  for (int r = 0; r < gpus; ++r)
    for (int owner = 0; owner < gpus; ++owner)
      if (owner != r) cudaMemcpyPeer(data[r] + owner * part, r, data[owner] + owner * part, owner, part * sizeof(float));
  cudaSetDevice(0);
}
