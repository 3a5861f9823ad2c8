// Calibration submission for the grading policy: lab 13, part 3, "the chapter's technique done
// right".
//
// Starter's flaw: parts of n / gpus elements, rounded down, as the chapter splits its matrix,
// which are not the contract's slices when n is not a multiple of gpus: the last n % gpus
// elements belong to no part, and every part after the first starts too early.
// Changes, and only these:
//   - part r is the contract's slice r, [r * ceil(n / gpus), (r + 1) * ceil(n / gpus)) clipped
//     to n, so the last parts are shorter or empty;
//   - an empty part is skipped (no zero-byte allocation, copy or launch).
// Kept: the chapter's way of combining GPUs' data, one GPU after another, with synchronous
// cudaMemcpyPeer copies into a scratch buffer and an add kernel for the reduce-scatter, and
// synchronous cudaMemcpyPeer copies of every other part for the all-gather. Not used:
// asynchronous copies on streams with events between GPUs, kernels reading peers over NVLink.
// Follows seed 004_39f2774132d9005b.txt, "单节点-多 GPU 高斯消元" (the split into one part per
// GPU, cudaMemcpyPeer from the GPU that holds the data), as part 1's chapter version does.
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

// Part r of n elements: the contract's slice r, [begin, end).
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

extern "C" void ring_reduce_scatter(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                                    float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                                    int gpus, size_t n, cudaStream_t /*stream*/) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || n == 0) return;  // one GPU already holds the sum of one array
  for (int r = 0; r < gpus; ++r) {
    const Part p = part_of(r, gpus, n);
    if (p.size() > 0) reduce_part(data, gpus, r, p);
  }
  cudaSetDevice(0);
}

extern "C" void ring_allgather(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t /*stream*/) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || n == 0) return;  // one GPU already holds every part
  for (int r = 0; r < gpus; ++r)
    for (int owner = 0; owner < gpus; ++owner) {
      const Part p = part_of(owner, gpus, n);
      if (owner != r && p.size() > 0)
        cudaMemcpyPeer(data[r] + p.begin, r, data[owner] + p.begin, owner, p.size() * sizeof(float));
    }
  cudaSetDevice(0);
}
