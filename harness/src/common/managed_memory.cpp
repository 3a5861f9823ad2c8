#include "labkit/managed_memory.h"

#include "labkit/cuda_check.h"

#include <unistd.h>

#include <cstring>
#include <vector>

namespace labkit {

ManagedMirror::~ManagedMirror() {
  if (data_ != nullptr) cudaFree(data_);
}

namespace {

// Undoes every advice a call can leave on the range; an advice never given is no error.
void unset_advice(void* data, std::size_t bytes) {
  CUDA_CHECK(cudaMemAdvise(data, bytes, cudaMemAdviseUnsetReadMostly, memory_location(cudaCpuDeviceId)));
  CUDA_CHECK(cudaMemAdvise(data, bytes, cudaMemAdviseUnsetPreferredLocation, memory_location(cudaCpuDeviceId)));
  CUDA_CHECK(cudaMemAdvise(data, bytes, cudaMemAdviseUnsetAccessedBy, memory_location(cudaCpuDeviceId)));
  int devices = 0;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  for (int device = 0; device < devices; ++device)
    CUDA_CHECK(cudaMemAdvise(data, bytes, cudaMemAdviseUnsetAccessedBy, memory_location(device)));
}

}  // namespace

void ManagedMirror::reset() {
  if (data_ == nullptr) {
    CUDA_CHECK(cudaMallocManaged(&data_, bytes_, cudaMemAttachGlobal));
  } else {
    // The same allocation, brought back to the state of a new one: no advice, every page
    // migrated back to the host and the GPU's copies dropped, all finished before the window
    // opens. Freeing and allocating anew would leave the driver tearing down the GPU's
    // mappings while the next window's copy runs, milliseconds of noise in that window.
    unset_advice(data_, bytes_);
    CUDA_CHECK(cudaMemPrefetchAsync(data_, bytes_, memory_location(cudaCpuDeviceId), 0, nullptr));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  // The CPU writes every page, so every page is in host memory: none is a shared zero page
  // that a later write would move, and none was left behind on a GPU.
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  auto* bytes = static_cast<volatile unsigned char*>(data_);
  for (std::size_t at = 0; at < bytes_; at += page) bytes[at] = 0;
}

void ManagedMirror::fill(const void* source) {
  if (data_ == nullptr) reset();
  std::memcpy(data_, source, bytes_);
}

void ManagedMirror::copy_back(void* destination) const {
  if (data_ != nullptr) std::memcpy(destination, data_, bytes_);
}

std::string ManagedMirror::advice_since_reset() const {
  if (data_ == nullptr) return "";
  // An attribute this driver cannot report is left out, and its error cleared: the host reads
  // cudaGetLastError after the call, and must not blame the submission for the question.
  auto query = [this](void* value, std::size_t size, cudaMemRangeAttribute attribute) {
    if (cudaMemRangeGetAttribute(value, size, attribute, data_, bytes_) == cudaSuccess) return true;
    cudaGetLastError();
    return false;
  };
  std::string found;
  auto note = [&found](const char* what) { found += found.empty() ? what : std::string(", ") + what; };
  int read_mostly = 0, preferred = 0, prefetched = 0;
  if (query(&read_mostly, sizeof read_mostly, cudaMemRangeAttributeReadMostly) && read_mostly != 0)
    note("cudaMemAdviseSetReadMostly");
  if (query(&preferred, sizeof preferred, cudaMemRangeAttributePreferredLocationType) &&
      preferred != cudaMemLocationTypeInvalid)
    note("cudaMemAdviseSetPreferredLocation");
  int devices = 1;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) cudaGetLastError();
  std::vector<int> accessed_by(std::size_t(devices > 0 ? devices : 1) + 1, cudaInvalidDeviceId);
  if (query(accessed_by.data(), accessed_by.size() * sizeof(int), cudaMemRangeAttributeAccessedBy))
    for (int device : accessed_by)
      if (device != cudaInvalidDeviceId) {
        note("cudaMemAdviseSetAccessedBy");
        break;
      }
  if (query(&prefetched, sizeof prefetched, cudaMemRangeAttributeLastPrefetchLocationType) &&
      prefetched == cudaMemLocationTypeDevice)
    note("cudaMemPrefetchAsync to a GPU");
  return found;
}

}  // namespace labkit
