// RAII device memory, sized in elements. Every buffer can be handed to the process that runs
// a submission (labkit/shared_memory.h), which maps it by itself and sees no other memory.
#pragma once

#include "labkit/cuda_check.h"
#include "labkit/shared_memory.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace labkit {

// Bytes that uninitialised output is filled with before each call under test: no valid
// count, sum or float is made of them, so output a function failed to write is caught.
constexpr int poison_byte = 0xA5;

template <class T>
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    // One element at least, so a function called with n = 0 still gets a valid pointer.
    data_ = static_cast<T*>(allocate_shared(bytes_allocated()));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() {
    if (data_ != nullptr) free_shared(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    swap(other);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void upload(const std::vector<T>& host) {
    if (host.size() != count_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
    CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  void poison(cudaStream_t stream = nullptr) {
    CUDA_CHECK(cudaMemsetAsync(data_, poison_byte, bytes_allocated(), stream));
  }

private:
  std::size_t bytes_allocated() const { return (count_ > 0 ? count_ : 1) * sizeof(T); }
  void swap(DeviceBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace labkit
