// Error checking for CUDA runtime calls, in the spirit of cuda-samples' checkCudaErrors:
// the message names the file, the line, the call's own text and the error's name and
// description. It throws instead of exiting, so a doctest case records a failure and the
// remaining cases still run.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace labkit {

class CudaError : public std::runtime_error {
public:
  CudaError(cudaError_t code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  cudaError_t code() const { return code_; }

private:
  cudaError_t code_;
};

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

inline void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw_cuda_error(code, call, file, line);
}

// Waits for every device this process sees and returns the first error (cudaSuccess when
// none), keeping the current device: for destructors, and for the host, which reports a
// submission's error instead of dying of it (labkit/device.h has the throwing form).
cudaError_t synchronize_every_device();

}  // namespace labkit

#define CUDA_CHECK(call) ::labkit::check_cuda((call), #call, __FILE__, __LINE__)

// After calling code that launches kernels: a bad launch configuration shows up in
// cudaGetLastError at once; a fault inside the kernel only once the stream has finished.
#define CUDA_CHECK_KERNELS(stream)                   \
  do {                                               \
    CUDA_CHECK(cudaGetLastError());                  \
    CUDA_CHECK(cudaStreamSynchronize(stream));       \
  } while (0)
