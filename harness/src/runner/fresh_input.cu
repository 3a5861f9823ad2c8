#include "labkit/fresh_input.h"

#include "labkit/cuda_check.h"
#include "labkit/device.h"

#include <mutex>
#include <random>

namespace labkit {

namespace {

template <class T>
__global__ void generate_kernel(T* out, std::size_t n, const ElementRule<T> rule) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = rule(i);
}

}  // namespace

std::uint64_t secret_seed() {
  static std::mutex mutex;
  static std::mt19937_64 engine = [] {
    std::random_device entropy;
    std::seed_seq seeds{entropy(), entropy(), entropy(), entropy()};
    return std::mt19937_64(seeds);
  }();
  const std::lock_guard<std::mutex> lock(mutex);
  return engine();
}

template <class T>
void generate_on_device(T* out, std::size_t n, const InputSpec& spec, cudaStream_t stream) {
  if (spec.distribution == Distribution::sorted_ascending || spec.distribution == Distribution::sorted_descending)
    throw std::invalid_argument("generate_on_device: sorted inputs are made on the CPU (generate)");
  if (n == 0) return;
  const int blocks = current_device().sm_count * 8;
  generate_kernel<<<blocks, 256, 0, stream>>>(out, n, element_rule<T>(spec, n));
  CUDA_CHECK(cudaGetLastError());
}

void copy_on_device(void* destination, const void* source, std::size_t bytes, int device) {
  const DeviceScope scope(device);
  CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, nullptr));
}

TimedCall timed_call(std::function<void(cudaStream_t)> launch, std::vector<RevealedBuffer*> inputs,
                     std::vector<CollectedBuffer*> outputs) {
  TimedCall call;
  call.launch = std::move(launch);
  call.prepare = [inputs, outputs](int) {
    for (RevealedBuffer* input : inputs) input->draw();
    for (CollectedBuffer* output : outputs) output->poison();
  };
  call.reveal = [inputs](bool rehearsal) {
    for (RevealedBuffer* input : inputs) input->reveal(rehearsal);
  };
  call.collect = [outputs](bool rehearsal) {
    for (CollectedBuffer* output : outputs) output->collect(rehearsal);
  };
  call.rehearsed_managed_inputs = [inputs] {
    std::vector<const void*> managed;
    for (const RevealedBuffer* input : inputs)
      if (const void* rehearsed = input->rehearsed_managed()) managed.push_back(rehearsed);
    return managed;
  };
  return call;
}

template void generate_on_device(std::uint8_t*, std::size_t, const InputSpec&, cudaStream_t);
template void generate_on_device(std::int32_t*, std::size_t, const InputSpec&, cudaStream_t);
template void generate_on_device(std::uint32_t*, std::size_t, const InputSpec&, cudaStream_t);
template void generate_on_device(float*, std::size_t, const InputSpec&, cudaStream_t);

}  // namespace labkit
