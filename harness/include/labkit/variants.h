// Inputs for timed calls. A case keeps a few inputs of the same size and distribution, and
// the submission always reads one live buffer: before each sample the kit copies a variant,
// picked at random from a source the submission cannot see, into it. The pointer never
// changes, so neither a replayed answer, nor one cached by pointer or by call count, passes
// the check that follows every timed call.
#pragma once

#include "labkit/buffer.h"

#include <random>
#include <vector>

namespace labkit {

// How many inputs a performance case keeps. Two suffice against a replayed or cached answer
// (a wrong guess is caught at the check that follows every call, and a run has ten or more
// calls); each one more costs its generation and its memory.
constexpr int input_variants = 2;

// The variant for a sample: random for timed samples, the first for warm-up (negative).
inline int pick_variant(int sample, int count) {
  static std::mt19937 engine{std::random_device{}()};
  if (sample < 0 || count <= 1) return 0;
  return int(engine() % unsigned(count));
}

template <class T>
class VariantBuffer {
public:
  explicit VariantBuffer(const std::vector<std::vector<T>>& variants) : live_(variants.at(0).size()) {
    for (const auto& host : variants) pristine_.emplace_back(host);
    load(0);
  }

  T* data() { return live_.data(); }
  std::size_t size() const { return live_.size(); }
  int count() const { return int(pristine_.size()); }

  // Copies variant `v` into the live buffer (untimed; device to device).
  void load(int v) {
    CUDA_CHECK(cudaMemcpy(live_.data(), pristine_.at(std::size_t(v)).data(), live_.bytes(), cudaMemcpyDeviceToDevice));
  }

private:
  std::vector<DeviceBuffer<T>> pristine_;
  DeviceBuffer<T> live_;
};

}  // namespace labkit
