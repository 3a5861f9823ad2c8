#include "labkit/managed_memory.h"

#include "labkit/cuda_check.h"

#include <unistd.h>

#include <cstring>
#include <vector>

namespace labkit {

ManagedMirror::~ManagedMirror() {
  if (data_ != nullptr) cudaFree(data_);
}

void ManagedMirror::reset() {
  if (data_ != nullptr) {
    // cudaFree waits for the device; work still reading the memory ends first.
    const cudaError_t freed = cudaFree(data_);
    data_ = nullptr;
    CUDA_CHECK(freed);
  }
  CUDA_CHECK(cudaMallocManaged(&data_, bytes_, cudaMemAttachGlobal));
  // The CPU touches every page first, so every page starts in host memory. Each page is
  // written (not only read), so none is a shared zero page that a later write would move.
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
