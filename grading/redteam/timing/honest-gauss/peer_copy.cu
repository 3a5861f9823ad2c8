// Lab 12, part 3 reference: times a peer copy with peer access set as asked, then puts it back.
//
// - Peer access is a property of a context: GPU a's context may map GPU b's memory. Enabling
//   it both ways (cudaDeviceEnablePeerAccess on each GPU for the other) lets the copy engines
//   move the bytes over NVLink (or PCIe peer to peer) directly; disabled, the driver stages
//   the same cudaMemcpyPeerAsync through pinned host memory.
// - There is no query for "is peer access on": cudaDeviceEnablePeerAccess tells, by returning
//   cudaErrorPeerAccessAlreadyEnabled (an error that must then be cleared). So the state found
//   is learnt by enabling, and restored at the end, because gauss_solve in the same process
//   may have turned it on and rely on it (the reference's does, once).
// - Each counted copy ends with both GPUs synchronised: the call returns as soon as the copy
//   is queued, and the bytes have landed only when the destination GPU says so. The first two
//   copies are not counted: the first sets up the path (and, with peer access on, the mapping).
// - The median, not the mean: a copy that waited for the host now and then does not move it.
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

// Peer access from `device` to `peer` set on or off; returns whether it was on before.
bool set_peer_access(int device, int peer, bool on) {
  cudaSetDevice(device);
  const cudaError_t enabled = cudaDeviceEnablePeerAccess(peer, 0);
  const bool was_on = enabled == cudaErrorPeerAccessAlreadyEnabled;
  cudaGetLastError();  // "already enabled" is sticky until read
  if (!on) cudaDeviceDisablePeerAccess(peer);
  return was_on;
}

double median_copy_microseconds(int from, int to, size_t bytes, int repeats) {
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
  return median(microseconds);
}

}  // namespace

extern "C" double time_peer_copy(int from, int to, int peer_access, size_t bytes, int repeats) {
  int caller_device = 0;
  cudaGetDevice(&caller_device);
  const bool from_was_on = set_peer_access(from, to, peer_access != 0);
  const bool to_was_on = set_peer_access(to, from, peer_access != 0);
  const double microseconds = median_copy_microseconds(from, to, bytes, repeats);
  set_peer_access(from, to, from_was_on);
  set_peer_access(to, from, to_was_on);
  cudaSetDevice(caller_device);
  return microseconds;
}
