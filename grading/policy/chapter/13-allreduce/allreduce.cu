// Calibration submission for the grading policy: lab 13, part 1, "the chapter's technique done
// right".
//
// Starter's flaw: the array is split into equal parts of n / gpus elements, rounded down, as
// the chapter splits its matrix, so when n is not a multiple of gpus the last n % gpus
// elements belong to no part and are never reduced (with n = 1 on two GPUs, nothing is).
// Changes, and only these:
//   - parts of ceil(n / gpus) elements; part r is [r * part, (r + 1) * part) clipped to n, so
//     the last parts are shorter or empty, and together they cover all n elements;
//   - an empty part is skipped (no zero-byte allocation, copy or launch).
// Kept: the chapter's way of combining GPUs' data, one GPU after another: GPU r fetches part r
// of every other GPU's array with a synchronous cudaMemcpyPeer into a scratch buffer and adds
// it into its own part r; then every GPU fetches the parts it did not sum, again with
// cudaMemcpyPeer. Each element is summed once, on one GPU, and then copied, so every GPU holds
// the same bits. Not used: asynchronous copies on streams with events between GPUs, kernels
// reading peers over NVLink, pipelining (the lab README's reduce-scatter / all-gather).
// Follows seed 004_39f2774132d9005b.txt, "单节点-多 GPU 高斯消元" (the split into one part per
// GPU, cudaMemcpyPeer from the GPU that holds the data); lab README, "Splitting the work:
// equal parts, and the remainder".
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

// GPU r adds part r of every other GPU's array into its own part r.
void reduce_part(float* const* data, int gpus, int r, Part p) {
  const size_t bytes = p.size() * sizeof(float);
  cudaSetDevice(r);
  float* incoming = nullptr;  // on GPU r: one peer's part at a time
  cudaMalloc(&incoming, bytes);
  for (int peer = 0; peer < gpus; ++peer) {
    if (peer == r) continue;
    cudaMemcpyPeer(incoming, r, data[peer] + p.begin, peer, bytes);
    add_into_kernel<<<grid_for(r), threads_per_block>>>(data[r] + p.begin, incoming, p.size());
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
