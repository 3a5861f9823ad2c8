// RAII device memory and page-locked host memory, sized in elements. Every buffer can be
// handed to the process that runs a submission (labkit/shared_memory.h), which maps it by
// itself and sees no other memory.
#pragma once

#include "labkit/cuda_check.h"
#include "labkit/device.h"
#include "labkit/shared_memory.h"

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace labkit {

// Bytes that uninitialised output is filled with before each call under test: no valid
// count, sum or float is made of them, so output a function failed to write is caught.
constexpr int poison_byte = 0xA5;

// `count` elements of device memory (the current device's, or reachable from it), on the host.
template <class T>
std::vector<T> download(const T* device_data, std::size_t count) {
  std::vector<T> host(count);
  if (count > 0) CUDA_CHECK(cudaMemcpy(host.data(), device_data, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

template <class T>
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  // On the current device.
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    CUDA_CHECK(cudaGetDevice(&device_));
    // One element at least, so a function called with n = 0 still gets a valid pointer.
    data_ = static_cast<T*>(allocate_shared(bytes_allocated()));
  }
  // On `device` (multi-GPU labs); every device that can reach it as a peer may access it.
  DeviceBuffer(std::size_t count, int device) : count_(count), device_(device) {
    const DeviceScope scope(device);
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
  int device() const { return device_; }

  void upload(const std::vector<T>& host) {
    if (host.size() != count_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
    const DeviceScope scope(device_);
    CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    const DeviceScope scope(device_);
    return labkit::download(data_, count_);
  }
  // `stream` must belong to the buffer's device (the default: its legacy stream).
  void poison(cudaStream_t stream = nullptr) {
    const DeviceScope scope(device_);
    CUDA_CHECK(cudaMemsetAsync(data_, poison_byte, bytes_allocated(), stream));
  }

private:
  std::size_t bytes_allocated() const { return (count_ > 0 ? count_ : 1) * sizeof(T); }
  void swap(DeviceBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(device_, other.device_);
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
  int device_ = 0;
};

// Page-locked host memory that the submission's process maps too (and pins there as well):
// for labs whose contract takes host pointers, e.g. copies overlapped with kernels. Both
// sides read and write it directly; the reference may hand it to cudaMemcpyAsync as it is.
template <class T>
class HostBuffer {
public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t count) : HostBuffer(count, MemoryKind::host) {}
  explicit HostBuffer(const std::vector<T>& values) : HostBuffer(values.size()) { assign(values); }
  ~HostBuffer() {
    if (data_ != nullptr) free_shared(data_);
  }
  HostBuffer(HostBuffer&& other) noexcept { swap(other); }
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    swap(other);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

  void assign(const std::vector<T>& values) {
    if (values.size() != count_) throw std::invalid_argument("HostBuffer::assign: size mismatch");
    std::memcpy(data_, values.data(), bytes());
  }
  std::vector<T> copy() const { return std::vector<T>(data_, data_ + count_); }
  // Waits for the device first: an asynchronous copy into this memory may still be queued.
  void poison() {
    synchronize_all_devices();
    std::memset(static_cast<void*>(data_), poison_byte, bytes_allocated());
  }

protected:
  HostBuffer(std::size_t count, MemoryKind kind) : count_(count) {
    data_ = static_cast<T*>(allocate_shared_host(bytes_allocated(), kind));
  }

private:
  std::size_t bytes_allocated() const { return (count_ > 0 ? count_ : 1) * sizeof(T); }
  void swap(HostBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// An input that a submission's function receives as CUDA managed memory (cudaMallocManaged)
// whose pages are on the host when the call starts (labkit/managed_memory.h): the checks write
// it like a HostBuffer, and the process that runs the submission copies it into managed memory
// of its own, on the CPU, before every call (and back after an untimed call, so that the checks
// see what the call left there). Its pointer is what the checks pass for the managed argument.
// It is an input: what a timed call writes there is not collected.
template <class T>
class ManagedBuffer : public HostBuffer<T> {
public:
  ManagedBuffer() = default;
  explicit ManagedBuffer(std::size_t count) : HostBuffer<T>(count, MemoryKind::managed) {}
  explicit ManagedBuffer(const std::vector<T>& values) : ManagedBuffer(values.size()) { this->assign(values); }
};

}  // namespace labkit
