// Lab 03 design record's tools: a call timed as the timeline times one (events, the L2
// flushed by a 256 MiB memset before each, median of 41), alone and behind a 50 us spin
// kernel that hides the host's launch latency (less the spin kernel's own time); an empty
// kernel of the reference's launch shape; and the timeline's input.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

// About `ns` nanoseconds at the H100's and H200's SM clocks; its own time is subtracted.
__global__ void spin_kernel(long long ns) {
  const long long t0 = clock64();
  while (clock64() - t0 < ns * 2) {}
}

__global__ void __launch_bounds__(512, 2) empty_kernel(int* p) {
  if (p && threadIdx.x == 9999) *p = 1;
}

class CallTimer {
 public:
  CallTimer() {
    cudaMalloc(&flush_, flush_bytes);
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
    spin_us_ = median_us([] {}, true);
  }
  template <class F>
  float alone_us(F call) { return median_us(call, false); }
  template <class F>
  float hidden_us(F call) { return median_us(call, true) - spin_us_; }

 private:
  static constexpr size_t flush_bytes = size_t(256) << 20;
  template <class F>
  float median_us(F call, bool behind_spin) {
    std::vector<float> samples;
    for (int r = 0; r < 41; ++r) {
      cudaMemsetAsync(flush_, r, flush_bytes);
      cudaDeviceSynchronize();
      cudaEventRecord(start_);
      if (behind_spin) spin_kernel<<<1, 1>>>(50000);
      call();
      cudaEventRecord(stop_);
      cudaEventSynchronize(stop_);
      float ms;
      cudaEventElapsedTime(&ms, start_, stop_);
      samples.push_back(ms * 1000);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
  }
  char* flush_ = nullptr;
  cudaEvent_t start_, stop_;
  float spin_us_ = 0;
};

// The reference's dynamic shared memory, which the empty kernel launches with: once, before
// either launch below.
inline void allow_empty_kernel_shared_memory() {
  cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 80 << 10);
}

// The empty kernel by a cooperative launch, with the reference's grid and shared memory.
inline void launch_empty_cooperative(int sm_count) {
  int* none = nullptr;
  void* args[] = {&none};
  cudaLaunchCooperativeKernel((void*)empty_kernel, dim3(2 * sm_count), dim3(512), args, 80 << 10, 0);
}

// n values from the timeline's generator (mt19937, seed 7) in `host`, copied to the device.
inline int32_t* timeline_input(size_t n, std::vector<int32_t>& host) {
  host.resize(n);
  std::mt19937 rng(7);
  for (auto& x : host) x = int32_t(rng());
  int32_t* device = nullptr;
  cudaMalloc(&device, n * sizeof(int32_t));
  cudaMemcpy(device, host.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice);
  return device;
}
