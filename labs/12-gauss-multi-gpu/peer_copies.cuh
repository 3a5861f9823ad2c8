// The kit's own measurement of a peer copy, for lab 12's benchmark (bench_gauss.cu) and for
// part 3's checks (test_gauss.cu), which compare a student's measurement with it.
// Buffers come from cudaMalloc: the kit's own buffers (DeviceBuffer) map every peer's memory
// themselves, which peer access off would not undo.
#pragma once

#include <labkit/cuda_check.h>
#include <labkit/device.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <utility>
#include <vector>

namespace peer_copies {

struct DeviceBytes {
  DeviceBytes(size_t bytes, int device) {
    const labkit::DeviceScope scope(device);
    CUDA_CHECK(cudaMalloc(&data, bytes));
  }
  ~DeviceBytes() { cudaFree(data); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* data = nullptr;
};

inline double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Whether `device` may reach `peer`'s memory directly (NVLink, or PCIe peer to peer).
inline bool direct_path(int device, int peer) {
  int can_access = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access, device, peer));
  return can_access != 0;
}

// Peer access from `device` to `peer`, on or off; returns whether it was on before. (There is
// no query: enabling tells, by "already enabled", and is undone when it was not.)
inline bool set_peer_access(int device, int peer, bool on) {
  const labkit::DeviceScope scope(device);
  const cudaError_t enabled = cudaDeviceEnablePeerAccess(peer, 0);
  const bool was_on = enabled == cudaErrorPeerAccessAlreadyEnabled;
  if (enabled != cudaSuccess && !was_on) CUDA_CHECK(enabled);
  cudaGetLastError();
  if (!on) CUDA_CHECK(cudaDeviceDisablePeerAccess(peer));
  return was_on;
}

// Peer access between a and b, both ways, set for the scope's life and then put back as it
// was, so that a solver in the same process that turned it on keeps it.
class PeerAccessScope {
public:
  PeerAccessScope(int a, int b, bool on) : a_(a), b_(b) {
    a_was_on_ = set_peer_access(a, b, on);
    b_was_on_ = set_peer_access(b, a, on);
  }
  ~PeerAccessScope() {
    try {
      set_peer_access(a_, b_, a_was_on_);
      set_peer_access(b_, a_, b_was_on_);
    } catch (...) {  // a destructor must not throw; a lost context shows in the next CUDA call
    }
  }
  PeerAccessScope(const PeerAccessScope&) = delete;
  PeerAccessScope& operator=(const PeerAccessScope&) = delete;

private:
  int a_, b_;
  bool a_was_on_ = false, b_was_on_ = false;
};

// The median time in ms of `repeats` copies of `bytes` from GPU `from` to GPU `to`, each
// waited for on both, after two that warm the path up, with peer access as it stands.
inline double peer_copy_ms(int from, int to, size_t bytes, int repeats) {
  using Clock = std::chrono::steady_clock;
  DeviceBytes source(bytes, from), destination(bytes, to);
  std::vector<double> ms;
  for (int r = 0; r < repeats + 2; ++r) {
    const auto start = Clock::now();
    CUDA_CHECK(cudaMemcpyPeerAsync(destination.data, to, source.data, from, bytes, nullptr));
    for (int device : {from, to}) {
      const labkit::DeviceScope scope(device);
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    if (r >= 2) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return median(ms);
}

}  // namespace peer_copies
