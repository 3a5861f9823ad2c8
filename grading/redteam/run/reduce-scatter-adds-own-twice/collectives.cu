// Red-team (lab 13, part 3): the contract's slices and peer reads over NVLink, but each GPU
// starts its slice's sum from its own value and then adds every GPU's, its own included:
// the owner's values count twice. The all-gather is right.
#include "allreduce.h"

namespace {

struct PeerPointers {
  float* gpu[allreduce_max_gpus];
};

__global__ void reduce_slice_kernel(PeerPointers data, int gpus, int owner, size_t begin, size_t end) {
  for (size_t i = begin + blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < end; i += size_t(blockDim.x) * gridDim.x) {
    float sum = data.gpu[owner][i];  // the mistake: its own value, and then every GPU's again
    for (int g = 0; g < gpus; ++g) sum += data.gpu[g][i];
    data.gpu[owner][i] = sum;
  }
}

__global__ void copy_slice_kernel(float* to, const float* from, size_t begin, size_t end) {
  for (size_t i = begin + blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < end; i += size_t(blockDim.x) * gridDim.x)
    to[i] = from[i];
}

// The contract's slices: ceil(n / gpus) each, clipped to n.
size_t slice_begin(int g, int gpus, size_t n) {
  const size_t per = (n + size_t(gpus) - 1) / size_t(gpus), begin = size_t(g) * per;
  return begin < n ? begin : n;
}
size_t slice_end(int g, int gpus, size_t n) { return slice_begin(g + 1, gpus, n); }

void synchronize(int gpus) {
  for (int g = 0; g < gpus; ++g) cudaSetDevice(g), cudaDeviceSynchronize();
  cudaSetDevice(0);
}

}  // namespace

extern "C" void ring_reduce_scatter(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                                    float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                                    int gpus, size_t n, cudaStream_t) {
  const PeerPointers data{{d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7}};
  if (gpus < 2 || n == 0) return;
  for (int r = 0; r < gpus; ++r) {
    cudaSetDevice(r);
    reduce_slice_kernel<<<264, 256>>>(data, gpus, r, slice_begin(r, gpus, n), slice_end(r, gpus, n));
  }
  synchronize(gpus);
}

extern "C" void ring_allgather(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t) {
  const PeerPointers data{{d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7}};
  if (gpus < 2 || n == 0) return;
  for (int r = 0; r < gpus; ++r) {
    cudaSetDevice(r);
    for (int s = 0; s < gpus; ++s)
      if (s != r) copy_slice_kernel<<<264, 256>>>(data.gpu[r], data.gpu[s], slice_begin(s, gpus, n), slice_end(s, gpus, n));
  }
  synchronize(gpus);
}
