// Inputs and outputs of timed calls (labkit/timing.h). Every timed call reads an input that no
// earlier call has seen, drawn on the GPU from a seed the submission's process never sees, and
// its output is judged by what it held when the call's time ended:
//
// - a FreshInput draws each sample's input into memory only the checks can reach, and
//   `reveal` copies it into the buffer the call reads as the first step of the timed window;
// - a TimedOutput's `collect` copies what the call wrote into memory only the checks can reach
//   as the last step of the window, and the checks compare that copy with the reference.
//
// Nothing the submission computes before the input appears, or after its output was taken,
// counts; whatever it computes in between, on any stream, context or process, lies inside the
// grader's clock. The round-trip probe rehearses both steps on buffers the call never sees, so
// the two cost the same on either side of the subtraction.
#pragma once

#include "labkit/buffer.h"
#include "labkit/defences.h"
#include "labkit/generators.h"
#include "labkit/timing.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

namespace labkit {

// A seed for one timed call's input, from a generator seeded by the operating system's entropy
// in the checks' process: neither the case's seed nor the run's secret predicts it.
std::uint64_t secret_seed();

// Writes generate<T>(n, spec)'s data on the GPU (every distribution but the sorted ones, which
// throw std::invalid_argument): the same values, bit for bit.
template <class T>
void generate_on_device(T* out, std::size_t n, const InputSpec& spec, cudaStream_t stream);

// Copies `bytes` between device or pinned host memory (either way round) on `device`'s legacy
// stream; the caller synchronises.
void copy_on_device(void* destination, const void* source, std::size_t bytes, int device);

// What a timed call reads: drawn afresh before each sample (untimed), revealed at the start of
// its window.
class RevealedBuffer {
public:
  virtual ~RevealedBuffer() = default;
  virtual void draw() = 0;
  virtual void reveal(bool rehearsal) = 0;
  // A managed input's rehearsal buffer, once a rehearsal has made it; else null.
  virtual const void* rehearsed_managed() const { return nullptr; }
};

// What a timed call writes: poisoned before each sample (untimed), collected at the end of its
// window.
class CollectedBuffer {
public:
  virtual ~CollectedBuffer() = default;
  virtual void poison() = 0;
  virtual void collect(bool rehearsal) = 0;
};

namespace detail {

// A buffer of the same kind as `Buffer`'s: device memory on `device`, or pinned host memory.
template <class T>
DeviceBuffer<T> allocate_like(const DeviceBuffer<T>*, std::size_t count, int device) {
  return DeviceBuffer<T>(count, device);
}
template <class T>
HostBuffer<T> allocate_like(const HostBuffer<T>*, std::size_t count, int) {
  return HostBuffer<T>(count);
}
template <class T>
ManagedBuffer<T> allocate_like(const ManagedBuffer<T>*, std::size_t count, int) {
  return ManagedBuffer<T>(count);
}

// Copies `from` into `kept` (or, rehearsing, into a buffer like `kept` made on first use):
// the step each end of the window takes. `device`: the device whose copy engine moves it.
template <class From, class Kept>
void copy_out_of_reach(const From& from, Kept& kept, std::optional<Kept>& scratch, bool rehearsal, int device) {
  if (rehearsal && !scratch) scratch.emplace(allocate_like(&kept, from.size(), device));
  auto* destination = rehearsal ? scratch->data() : kept.data();
  copy_on_device(destination, from.data(), from.bytes(), device);
}

}  // namespace detail

// An input of a timed call: drawn on the GPU, and revealed in device memory (`Live` a
// DeviceBuffer) or, for a contract that takes host pointers, in pinned host memory
// (FreshHostInput), or in the shared host memory that the submission's process copies into
// managed memory before the call (FreshManagedInput: the reveal lands in the shared memory as
// the window opens, and that process's copy into managed memory is inside the window too, so
// no code of the submission's sees the input before it). A call that sorts in place also writes
// it: list it among the outputs too, and its result is collected like any other output's (not
// a managed input's).
template <class T, class Live = DeviceBuffer<T>>
class FreshInput final : public RevealedBuffer, public CollectedBuffer {
public:
  // Writes an input of the case's shape from `seed` (a generate_on_device call, usually).
  using Generator = std::function<void(T* out, std::uint64_t seed, cudaStream_t stream)>;

  FreshInput(std::size_t count, Generator generator, int device = 0)
      : generator_(std::move(generator)), drawn_(count, device),
        live_(detail::allocate_like(static_cast<Live*>(nullptr), count, device)) {}
  // The case's distribution and range, with a fresh seed for every draw.
  FreshInput(std::size_t count, const InputSpec& spec, int device = 0)
      : FreshInput(count, [count, spec](T* out, std::uint64_t seed, cudaStream_t stream) {
          InputSpec fresh = spec;
          fresh.seed = seed;
          generate_on_device(out, count, fresh, stream);
        }, device) {}

  T* data() { return live_.data(); }                // what the submission's call reads
  const T* drawn() const { return drawn_.data(); }  // the same input on the GPU, out of its reach
  std::size_t size() const { return live_.size(); }
  std::vector<T> download_drawn() const { return drawn_.download(); }

  // Untimed: a new input, where only the checks can read it (with the fresh-inputs defence
  // off, the first one again and again).
  void draw() override {
    if (drawn_once_ && !defence_enabled(Defence::fresh_inputs)) return;
    const DeviceScope scope(drawn_.device());
    generator_(drawn_.data(), secret_seed(), nullptr);
    CUDA_CHECK(cudaGetLastError());
    drawn_once_ = true;
  }
  // The window's first step: the drawn input appears where the call reads it.
  void reveal(bool rehearsal) override {
    detail::copy_out_of_reach(drawn_, live_, reveal_scratch_, rehearsal, drawn_.device());
  }
  const void* rehearsed_managed() const override {
    if constexpr (std::is_same_v<Live, ManagedBuffer<T>>) return reveal_scratch_ ? reveal_scratch_->data() : nullptr;
    return nullptr;
  }

  // As an output (in place): the reveal overwrites it anyway.
  void poison() override {}
  void collect(bool rehearsal) override {
    if (!collected_) collected_.emplace(size(), drawn_.device());
    detail::copy_out_of_reach(live_, *collected_, collect_scratch_, rehearsal, drawn_.device());
  }
  std::vector<T> collected() const { return collected_.value().download(); }
  const T* collected_data() const { return collected_.value().data(); }

private:
  Generator generator_;
  bool drawn_once_ = false;
  DeviceBuffer<T> drawn_;
  Live live_;
  std::optional<Live> reveal_scratch_;
  std::optional<DeviceBuffer<T>> collected_, collect_scratch_;
};

// What a timed call writes, in device memory or (TimedHostOutput) pinned host memory; it is
// collected into device memory only the checks can reach.
template <class T, class Live = DeviceBuffer<T>>
class TimedOutput final : public CollectedBuffer {
public:
  explicit TimedOutput(std::size_t count, int device = 0)
      : live_(detail::allocate_like(static_cast<Live*>(nullptr), count, device)), collected_(count, device) {}

  T* data() { return live_.data(); }  // what the submission's call writes
  std::size_t size() const { return live_.size(); }
  void poison() override { live_.poison(); }
  // The window's last step: what the call wrote is copied where only the checks read it.
  void collect(bool rehearsal) override {
    detail::copy_out_of_reach(live_, collected_, scratch_, rehearsal, collected_.device());
  }
  std::vector<T> collected() const { return collected_.download(); }  // as it was when the time ended
  const T* collected_data() const { return collected_.data(); }

private:
  Live live_;
  DeviceBuffer<T> collected_;
  std::optional<DeviceBuffer<T>> scratch_;
};

template <class T>
using FreshHostInput = FreshInput<T, HostBuffer<T>>;
template <class T>
using TimedHostOutput = TimedOutput<T, HostBuffer<T>>;
template <class T>
using FreshManagedInput = FreshInput<T, ManagedBuffer<T>>;

// The timed call that reads `inputs` and writes `outputs`: before each sample every input is
// drawn and every output poisoned; its window reveals the inputs and collects the outputs.
TimedCall timed_call(std::function<void(cudaStream_t)> launch, std::vector<RevealedBuffer*> inputs,
                     std::vector<CollectedBuffer*> outputs);

}  // namespace labkit
