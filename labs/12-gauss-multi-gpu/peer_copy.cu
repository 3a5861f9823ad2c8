// Lab 12, part 3 starter: times a peer copy the way the README's "Measuring the machine"
// describes: cudaMalloc'd buffers on both GPUs, a few copies that are not counted, then
// `repeats` copies, each finished on both GPUs before the clock stops; the median.
//
// It ignores `peer_access`: it never enables peer access between the GPUs (nor disables it),
// so it measures whatever a fresh process gets, the copy staged through host memory, and
// calls that "peer access on" too. The README says which two calls are missing, and how to
// leave the GPUs as the call found them.
#include "gauss.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace {

constexpr int uncounted_copies = 2;

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

void finish_on(int device) {
  cudaSetDevice(device);
  cudaDeviceSynchronize();
}

}  // namespace

extern "C" double time_peer_copy(int from, int to, int peer_access, size_t bytes, int repeats) {
  (void)peer_access;  // the chapter's setup, cudaDeviceCanAccessPeer and cudaDeviceEnablePeerAccess, is missing
  int caller_device = 0;
  cudaGetDevice(&caller_device);
  void* source = nullptr;
  void* destination = nullptr;
  cudaSetDevice(from);
  cudaMalloc(&source, bytes);
  cudaSetDevice(to);
  cudaMalloc(&destination, bytes);

  std::vector<double> microseconds;
  for (int copy = 0; copy < uncounted_copies + repeats; ++copy) {
    const auto start = std::chrono::steady_clock::now();
    cudaMemcpyPeerAsync(destination, to, source, from, bytes, nullptr);
    finish_on(from);
    finish_on(to);
    const auto end = std::chrono::steady_clock::now();
    if (copy >= uncounted_copies) microseconds.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  cudaFree(destination);
  cudaSetDevice(from);
  cudaFree(source);
  cudaSetDevice(caller_device);
  return median(microseconds);
}
