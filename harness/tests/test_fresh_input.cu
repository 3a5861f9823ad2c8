// The timed calls' inputs and outputs on a GPU (labkit/fresh_input.h): the GPU draws what the
// CPU generator makes, bit for bit, each draw is new, and a window's two ends move the bytes
// they should. Exits 77 (skipped) without a GPU, saying why.
#define DOCTEST_CONFIG_IMPLEMENT
#include "labkit/device.h"
#include "labkit/fresh_input.h"
#include "labkit/managed_memory.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

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

InputSpec all_same_with_strays(std::uint64_t seed, double lo, double hi) {
  InputSpec spec{Distribution::all_same, seed, lo, hi};
  spec.strays = InputSpec::max_strays;
  return spec;
}

// all_same's strays: the same values at the same places on both sides, and there at all.
template <class T>
void check_strays(double lo, double hi) {
  for (std::uint64_t seed : {1ull, 2ull, 12345ull}) {
    CAPTURE(seed);
    const InputSpec spec = all_same_with_strays(seed, lo, hi);
    const std::vector<T> drawn = drawn_on_device<T>(100003, spec);
    CHECK(drawn == labkit::generate<T>(100003, spec));
    CHECK(std::set<T>(drawn.begin(), drawn.end()).size() > 1);
  }
}

}  // namespace

TEST_CASE("the GPU draws exactly what the CPU generator makes") {
  check_every_distribution<std::uint8_t>(0, 255);
  check_every_distribution<std::int32_t>(-2147483648.0, 2147483647.0);
  check_every_distribution<std::uint32_t>(0, 4294967295.0);
  check_every_distribution<float>(-1, 1);
}

TEST_CASE("the GPU puts all_same's strays where the CPU generator does") {
  check_strays<std::uint8_t>(0, 255);
  check_strays<std::int32_t>(-2147483648.0, 2147483647.0);
  check_strays<std::uint32_t>(0, 4294967295.0);
  check_strays<float>(-1, 1);
}

TEST_CASE("each draw of an all_same input with strays puts them elsewhere") {
  labkit::FreshInput<std::uint8_t> input(1 << 20, all_same_with_strays(1, 0, 255));
  const labkit::TimedCall call = labkit::timed_call([](cudaStream_t) {}, {&input}, {});
  // The positions of the values other than the most common one.
  const auto strays = [&input] {
    const std::vector<std::uint8_t> values = input.download_drawn();
    std::vector<std::size_t> counts(256);
    for (std::uint8_t v : values) ++counts[v];
    const auto constant = std::uint8_t(std::max_element(counts.begin(), counts.end()) - counts.begin());
    std::set<std::size_t> positions;
    for (std::size_t i = 0; i < values.size(); ++i)
      if (values[i] != constant) positions.insert(i);
    return positions;
  };
  call.prepare(0);
  const std::set<std::size_t> first = strays();
  call.prepare(1);
  const std::set<std::size_t> second = strays();
  CHECK(!first.empty());
  CHECK(first.size() <= std::size_t(InputSpec::max_strays));
  CHECK(first != second);
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

namespace {

__global__ void read_all_kernel(const int* in, std::size_t n, int* sum) {
  int acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    acc += in[i];
  atomicAdd(sum, acc);
}

cudaMemLocation this_gpu() {
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  CUDA_CHECK(cudaGetDevice(&location.id));
  return location;
}

}  // namespace

TEST_CASE("a managed buffer is shared host memory that names itself managed") {
  labkit::ManagedBuffer<int> buffer(std::vector<int>{1, 2, 3});
  const labkit::SharedLocation location = labkit::locate_shared(buffer.data() + 1);
  CHECK(location.offset == sizeof(int));
  const labkit::ExportedAllocation exported = labkit::export_shared(location.id);
  CHECK(exported.kind == labkit::MemoryKind::managed);
  CHECK(exported.bytes >= 3 * sizeof(int));
  close(exported.fd);
  CHECK(buffer.copy() == std::vector<int>{1, 2, 3});
}

TEST_CASE("a managed mirror: filled and read back by the CPU, read by the GPU, fresh after a reset") {
  const std::size_t n = std::size_t(1) << 20;
  std::vector<int> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = int(i % 1000);
  labkit::ManagedMirror mirror(n * sizeof(int));
  CHECK(mirror.data() == nullptr);
  mirror.fill(values.data());  // resets first: nothing allocated yet
  REQUIRE(mirror.data() != nullptr);
  CHECK(mirror.advice_since_reset().empty());

  labkit::DeviceBuffer<int> sum(1);
  CUDA_CHECK(cudaMemset(sum.data(), 0, sizeof(int)));
  read_all_kernel<<<64, 256>>>(static_cast<const int*>(mirror.data()), n, sum.data());
  CUDA_CHECK_KERNELS(nullptr);
  long long expected = 0;
  for (int v : values) expected += v;
  CHECK(sum.download()[0] == int(expected));

  // What a call might leave on it, each seen; a reset drops it all.
  const auto* data = static_cast<const int*>(mirror.data());
  CUDA_CHECK(cudaMemAdvise(data, n * sizeof(int), cudaMemAdviseSetReadMostly, this_gpu()));
  CHECK(mirror.advice_since_reset().find("ReadMostly") != std::string::npos);
  CUDA_CHECK(cudaMemAdvise(data, n * sizeof(int), cudaMemAdviseSetAccessedBy, this_gpu()));
  CHECK(mirror.advice_since_reset().find("AccessedBy") != std::string::npos);
  CUDA_CHECK(cudaMemAdvise(data, n * sizeof(int), cudaMemAdviseSetPreferredLocation, this_gpu()));
  CHECK(mirror.advice_since_reset().find("PreferredLocation") != std::string::npos);
  CUDA_CHECK(cudaMemPrefetchAsync(data, n * sizeof(int), this_gpu(), 0, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  CHECK(mirror.advice_since_reset().find("cudaMemPrefetchAsync") != std::string::npos);

  std::vector<int> back(n, -1);
  mirror.copy_back(back.data());  // the pages come back to the host to be read
  CHECK(back == values);

  mirror.reset();  // the same memory, its advice undone and its pages back on the host
  CHECK(mirror.data() == data);
  CHECK(mirror.advice_since_reset().empty());
  mirror.fill(values.data());
  mirror.copy_back(back.data());
  CHECK(back == values);
}

TEST_CASE("a managed fresh input reveals into shared memory, and its rehearsal names its own buffer") {
  const InputSpec spec{Distribution::uniform, 7, -1000, 1000};
  labkit::FreshManagedInput<int> input(4096, spec);
  labkit::TimedOutput<int> output(16);
  const labkit::TimedCall call = labkit::timed_call([](cudaStream_t) {}, {&input}, {&output});
  CHECK(call.rehearsed_managed_inputs().empty());  // no rehearsal yet
  call.prepare(0);
  call.reveal(false);
  labkit::synchronize_all_devices();
  CHECK(std::vector<int>(input.data(), input.data() + 4096) == input.download_drawn());
  call.reveal(true);
  labkit::synchronize_all_devices();
  const std::vector<const void*> rehearsed = call.rehearsed_managed_inputs();
  REQUIRE(rehearsed.size() == 1);
  CHECK(rehearsed[0] != static_cast<const void*>(input.data()));
  const labkit::ExportedAllocation exported = labkit::export_shared(labkit::locate_shared(rehearsed[0]).id);
  CHECK(exported.kind == labkit::MemoryKind::managed);
  close(exported.fd);
}

int main(int argc, char** argv) {
  if (const auto why = labkit::why_no_gpu()) {
    std::printf("skipped: %s\n", why->c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
