#include "labkit/cuda_check.h"

#include <sstream>

namespace labkit {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream message;
  message << file << ':' << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
          << cudaGetErrorString(code) << ')';
  throw CudaError(code, message.str());
}

}  // namespace labkit
