// What the current GPU is, and whether there is one at all.
#pragma once

#include "labkit/exit_status.h"

#include <cstddef>
#include <optional>
#include <string>

namespace labkit {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0;
  int minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_memory_bytes = 0;
  std::size_t shared_memory_per_block_optin = 0;
  // Every FP32 lane issuing one FMA (2 FLOPs) per cycle at the highest clock: no kernel
  // computes faster, so it bounds a compute-bound lab's time from below.
  double peak_fp32_gflops = 0;
  // The same bound for BF16 multiply-adds on the tensor cores (dense, FP32 accumulation), from
  // each architecture's tensor-core rate per multiprocessor and cycle; an architecture the kit
  // does not know gets the highest rate it does know, so the bound stays a bound.
  double peak_bf16_tensor_gflops = 0;
};

// Why no CUDA GPU can be used here ("no CUDA GPU found here", "no CUDA GPU here (no NVIDIA
// driver is loaded on this machine)", a driver too old for the kit's CUDA), or nothing.
std::optional<std::string> why_no_gpu();

// What a lab needs of the machine; the kit as a whole needs CUDA 13's floor, 7.5.
struct Requirements {
  int major = 7;
  int minor = 5;
  int gpus = 1;
};

// Why this machine cannot run a lab with these requirements (no GPU, too old a GPU, too few
// GPUs), or nothing.
std::optional<std::string> why_unsupported(const Requirements& needed);

// The device the runtime will use. Requires a GPU.
const DeviceInfo& current_device();

// How many devices this process sees (0 without a GPU).
int device_count();

// Waits for every device this process sees: work of a multi-GPU call, or on other devices'
// streams, has ended when this returns. Throws CudaError on the first error
// (synchronize_every_device in labkit/cuda_check.h returns it instead).
void synchronize_all_devices();

// Makes `device` current for the scope's lifetime, then restores the device that was.
class DeviceScope {
public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

private:
  int previous_ = 0;
};

// Exit code by which Meson (and the grader) recognise a skipped test: a benchmark's name for
// labkit/protocol.h's exit_status::skipped, where every exit status is defined.
constexpr int skip_exit_code = protocol::exit_status::skipped;

}  // namespace labkit
