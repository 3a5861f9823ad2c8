// CUDA managed memory (cudaMallocManaged) as a lab's checks hand it to a contract function:
// memory whose pages are on the host when the call starts, as they are after the CPU has
// written the input. Managed memory cannot be shared with another process, so the checks keep
// the input in a labkit::ManagedBuffer (shared host memory, labkit/buffer.h) and the process
// that makes the call copies it into a ManagedMirror of its own: the submission's host before
// each call of the submission's (harness/src/host/), the checks themselves before a call of
// the reference's. One class, so both sides start from the same state.
//
// The state a call starts from, and how it is reached:
//   reset()  the managed memory (allocated at the first reset) as a new allocation finds it:
//            no advice (cudaMemAdvise) left by an earlier call, every page migrated back to
//            the host and written there by the CPU, no copy of it on a GPU, the driver's work
//            for all of it finished. Costly (a migration and a page fault per page), so a
//            timed call's is made before its window opens.
//   fill()   the input copied in by the CPU: every page written by the CPU just before the
//            call, so every page is on the host however the memory was used since the reset.
//            It moves the input's bytes and nothing else: pages already on the host, it costs
//            what the empty call's fill of the same size costs.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace labkit {

// The location of `device`'s memory, or of the host's (device = cudaCpuDeviceId), as the
// prefetch and advice calls of the CUDA 13 runtime take it.
inline cudaMemLocation memory_location(int device) {
  cudaMemLocation location{};
  location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  location.id = device == cudaCpuDeviceId ? 0 : device;
  return location;
}

class ManagedMirror {
public:
  explicit ManagedMirror(std::size_t bytes) : bytes_(bytes > 0 ? bytes : 1) {}
  ~ManagedMirror();
  ManagedMirror(const ManagedMirror&) = delete;
  ManagedMirror& operator=(const ManagedMirror&) = delete;

  void* data() const { return data_; }  // null before the first reset
  std::size_t bytes() const { return bytes_; }

  void reset();
  // Copies `bytes()` bytes from `source` (host memory) into the managed memory on the CPU,
  // resetting first when nothing was allocated yet.
  void fill(const void* source);
  // Copies the managed memory back into `destination` on the CPU (its pages come back to the
  // host): what a call left there, for the checks to see.
  void copy_back(void* destination) const;
  // "" when the memory has no advice and no prefetch to a GPU on it since the reset; otherwise
  // what was found ("cudaMemAdviseSetReadMostly"...). A reset allocation has none, so anything
  // found was set by code that ran between the reset and this question.
  std::string advice_since_reset() const;

private:
  std::size_t bytes_;
  void* data_ = nullptr;
};

}  // namespace labkit
