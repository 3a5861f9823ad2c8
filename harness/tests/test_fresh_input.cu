// The timed calls' inputs and outputs on a GPU (labkit/fresh_input.h): the GPU draws what the
// CPU generator makes, bit for bit, each draw is new, and a window's two ends move the bytes
// they should. Exits 77 (skipped) without a GPU, saying why.
#define DOCTEST_CONFIG_IMPLEMENT
#include "labkit/device.h"
#include "labkit/fresh_input.h"

#include <doctest/doctest.h>

#include <cstdio>

using labkit::Distribution;
using labkit::InputSpec;

namespace {

template <class T>
std::vector<T> drawn_on_device(std::size_t n, const InputSpec& spec) {
  labkit::DeviceBuffer<T> out(n);
  labkit::generate_on_device(out.data(), n, spec, nullptr);
  return out.download();
}

template <class T>
void check_every_distribution(double lo, double hi) {
  for (Distribution d : {Distribution::uniform, Distribution::all_same, Distribution::few_distinct,
                         Distribution::skewed, Distribution::extremes}) {
    InputSpec spec{d, 12345, lo, hi, 5};
    CAPTURE(labkit::to_string(d));
    CHECK(drawn_on_device<T>(100003, spec) == labkit::generate<T>(100003, spec));
  }
}

}  // namespace

TEST_CASE("the GPU draws exactly what the CPU generator makes") {
  check_every_distribution<std::uint8_t>(0, 255);
  check_every_distribution<std::int32_t>(-2147483648.0, 2147483647.0);
  check_every_distribution<std::uint32_t>(0, 4294967295.0);
  check_every_distribution<float>(-1, 1);
}

TEST_CASE("sorted inputs are refused on the GPU") {
  labkit::DeviceBuffer<int> out(16);
  CHECK_THROWS_AS(labkit::generate_on_device(out.data(), 16, InputSpec{Distribution::sorted_ascending}, nullptr),
                  std::invalid_argument);
}

TEST_CASE("every draw is a new input; the window's ends move it in and out of reach") {
  const InputSpec spec{Distribution::uniform, 1, -1000, 1000};
  labkit::FreshInput<int> input(4096, spec);
  labkit::TimedOutput<int> output(4096);
  const labkit::TimedCall call = labkit::timed_call(
      [&](cudaStream_t) {
        CUDA_CHECK(cudaMemcpy(output.data(), input.data(), 4096 * sizeof(int), cudaMemcpyDeviceToDevice));
      },
      {&input}, {&output});

  call.prepare(0);
  const std::vector<int> first = input.download_drawn();
  call.prepare(1);
  const std::vector<int> second = input.download_drawn();
  CHECK(first != second);

  call.reveal(true);  // a rehearsal leaves the buffer the call reads alone
  labkit::synchronize_all_devices();
  call.reveal(false);
  call.launch(nullptr);
  call.collect(false);
  labkit::synchronize_all_devices();
  CHECK(output.collected() == second);

  call.prepare(2);  // poisons the output; what was collected stays
  call.collect(true);
  labkit::synchronize_all_devices();
  CHECK(output.collected() == second);
}

int main(int argc, char** argv) {
  if (const auto why = labkit::why_no_gpu()) {
    std::printf("skipped: %s\n", why->c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
