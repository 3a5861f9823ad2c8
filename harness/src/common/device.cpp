#include "labkit/device.h"

#include "labkit/cuda_check.h"

#include <fstream>

namespace labkit {

// The loaded NVIDIA kernel driver's own line ("NVRM version: ... 580.159.04 ..."), or "" when
// no NVIDIA driver is loaded.
static std::string loaded_driver_line() {
  std::ifstream version("/proc/driver/nvidia/version");
  std::string line;
  std::getline(version, line);
  return line;
}

std::optional<std::string> why_no_gpu() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0))
    return std::string("no CUDA GPU found here");
  if (status == cudaSuccess) return std::nullopt;
  // The runtime calls a missing driver an "insufficient" one: said as it is, that would send a
  // student without a GPU off to update a driver they do not have.
  if (status == cudaErrorInsufficientDriver) {
    const std::string driver = loaded_driver_line();
    if (driver.empty()) return std::string("no CUDA GPU here (no NVIDIA driver is loaded on this machine)");
    return "the NVIDIA driver here is older than this kit's CUDA " + std::to_string(CUDART_VERSION / 1000) +
           " needs; update it (" + driver + ")";
  }
  return std::string("no CUDA GPU can be used here (") + cudaGetErrorName(status) + ": " +
         cudaGetErrorString(status) + ")";
}

std::optional<std::string> why_unsupported(const Requirements& needed) {
  if (auto reason = why_no_gpu()) return reason;
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count < needed.gpus)
    return "needs " + std::to_string(needed.gpus) + " GPUs, this machine has " + std::to_string(count);
  const DeviceInfo& device = current_device();
  if (device.major * 10 + device.minor < needed.major * 10 + needed.minor)
    return "needs compute capability " + std::to_string(needed.major) + "." + std::to_string(needed.minor) +
           " or newer; " + device.name + " has " + std::to_string(device.major) + "." + std::to_string(device.minor);
  return std::nullopt;
}

// FP32 lanes per multiprocessor: 64 on Volta, Turing and A100 (8.0), 128 from 8.6 on.
static int fp32_lanes_per_sm(int major, int minor) {
  return major > 8 || (major == 8 && minor > 0) ? 128 : 64;
}

// Dense BF16 FLOPs per multiprocessor per cycle on the tensor cores, FP32 accumulation: 2048 on
// A100 (8.0), 1024 on the 8.6/8.9 parts at full rate, 4096 on Hopper's wgmma (9.0), 8192 on
// Blackwell (10.x) and, as an upper bound, on anything newer. Turing (7.5) has no BF16 path.
static int bf16_tensor_flops_per_sm_cycle(int major, int minor) {
  if (major < 8) return 0;
  if (major == 8) return minor == 0 ? 2048 : 1024;
  return major == 9 ? 4096 : 8192;
}

static DeviceInfo query_current_device() {
  DeviceInfo info;
  CUDA_CHECK(cudaGetDevice(&info.ordinal));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, info.ordinal));
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = std::size_t(prop.l2CacheSize);
  info.global_memory_bytes = prop.totalGlobalMem;
  info.shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
  int clock_khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, info.ordinal));
  info.peak_fp32_gflops = 2.0 * fp32_lanes_per_sm(info.major, info.minor) * info.sm_count * clock_khz * 1e-6;
  info.peak_bf16_tensor_gflops =
      double(bf16_tensor_flops_per_sm_cycle(info.major, info.minor)) * info.sm_count * clock_khz * 1e-6;
  return info;
}

const DeviceInfo& current_device() {
  static const DeviceInfo info = query_current_device();
  return info;
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

cudaError_t synchronize_every_device() {
  int count = 0, current = 0;
  cudaError_t first = cudaGetDeviceCount(&count);
  if (first == cudaSuccess) first = cudaGetDevice(&current);
  if (first != cudaSuccess) return first;
  if (count <= 1) return cudaDeviceSynchronize();
  for (int device = 0; device < count; ++device) {
    cudaError_t status = cudaSetDevice(device);
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
    if (first == cudaSuccess) first = status;
  }
  const cudaError_t restored = cudaSetDevice(current);
  return first != cudaSuccess ? first : restored;
}

void synchronize_all_devices() { CUDA_CHECK(synchronize_every_device()); }

DeviceScope::DeviceScope(int device) {
  CUDA_CHECK(cudaGetDevice(&previous_));
  if (device != previous_) CUDA_CHECK(cudaSetDevice(device));
}

DeviceScope::~DeviceScope() { (void)cudaSetDevice(previous_); }

}  // namespace labkit
