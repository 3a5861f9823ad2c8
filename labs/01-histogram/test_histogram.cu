// Lab 01 checks: the student's histogram against a CPU count on every dataset case, then
// its speed against the reference solution's on the performance cases.
#include "cub_histogram.cuh"
#include "histogram.h"

#include <labkit/device_compare.cuh>
#include <labkit/lab.h>

#include <mutex>
#include <numeric>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using Histogram = std::vector<uint32_t>;
constexpr int bin_count = 256;
constexpr uint32_t poison_word = 0x01010101u * labkit::poison_byte;

// A case may start the input `offset` bytes past an aligned address, to test that wide loads
// cope with any pointer the contract allows.
std::vector<uint8_t> make_input(const Case& c) {
  const size_t offset = size_t(c.integer("offset", 0));
  return labkit::generate<uint8_t>(c.n + offset, c.input);
}

// On all cores, a histogram per chunk then their sum: the 1 GiB cases would otherwise spend
// seconds of each run here.
Histogram cpu_histogram(const std::vector<uint8_t>& input, size_t offset) {
  const size_t n = input.size() - offset;
  std::mutex mutex;
  Histogram bins(bin_count, 0);
  labkit::parallel_chunks(n, [&](size_t begin, size_t end) {
    Histogram local(bin_count, 0);
    for (size_t i = begin; i < end; ++i) ++local[input[offset + i]];
    std::lock_guard lock(mutex);
    for (int b = 0; b < bin_count; ++b) bins[b] += local[b];
  });
  return bins;
}

// Names the likely mistake from the shape of the error.
std::string diagnose(const Histogram& expected, const Histogram& actual, size_t n) {
  for (int b = 0; b < bin_count; ++b)
    if (actual[b] - expected[b] == poison_word)
      return "bin " + std::to_string(b) +
             " still holds what it held before the call: histogram must zero d_bins itself";
  const uint64_t total = std::accumulate(actual.begin(), actual.end(), uint64_t(0));
  if (total != n)
    return "the bins add up to " + std::to_string(total) + ", not n = " + std::to_string(n) +
           ": some bytes were skipped or counted twice (hint: check each thread's first index "
           "and its stride)";
  return "the bins add up to n but some are wrong: updates were lost (hint: concurrent "
         "increments of one bin need atomics)";
}

void check_histogram(const Case& c) {
  const size_t offset = size_t(c.integer("offset", 0));
  const std::vector<uint8_t> input = make_input(c);
  const Histogram expected = cpu_histogram(input, offset);
  labkit::export_array(c, "input", std::vector<uint8_t>(input.begin() + offset, input.end()));
  labkit::export_array(c, "expected_bins", expected);

  DeviceBuffer<uint8_t> d_in(input);
  DeviceBuffer<uint32_t> d_bins(bin_count);
  d_bins.poison();
  labkit::student<decltype(histogram)>("histogram")(d_in.data() + offset, c.n, d_bins.data(), nullptr);
  CUDA_CHECK_KERNELS(nullptr);

  if (d_in.download() != input) {
    labkit::verdict(c, false, "histogram modified its input: d_in is const and must come back unchanged");
    return;
  }
  const Histogram actual = d_bins.download();
  const labkit::Comparison comparison = labkit::compare_exact(expected, actual);
  labkit::verdict(c, comparison.ok(),
                  comparison.ok() ? "" : diagnose(expected, actual, c.n) + ". " +
                      comparison.describe([](size_t b) { return "bin " + std::to_string(b); }));
}

// A timed call's buffers: an input drawn afresh in the case's distribution for every call
// (labkit/fresh_input.h), the bins it writes, and the reference's bins for the same input.
struct PerfBuffers {
  explicit PerfBuffers(const Case& c) : input(c.n, c.input), bins(bin_count), expected(bin_count), cub(c.n) {}
  labkit::FreshInput<uint8_t> input;
  labkit::TimedOutput<uint32_t> bins;
  DeviceBuffer<uint32_t> expected;
  CubHistogram cub;
};

labkit::PerfSubject perf_subject(labkit::Function<decltype(histogram)> fn, const Case& c, PerfBuffers& b) {
  return {labkit::timed_call([fn, &c, &b](cudaStream_t stream) { fn(b.input.data(), c.n, b.bins.data(), stream); },
                             {&b.input}, {&b.bins}),
          [&c, &b] {
            labkit::reference<decltype(histogram)>("histogram")(b.input.drawn(), c.n, b.expected.data(), nullptr);
            return labkit::compare_exact_on_device(b.expected.data(), b.bins.collected_data(), bin_count).describe();
          }};
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("histogram matches a CPU count") {
    labkit::for_each_correctness_case([](const Case& c) { check_histogram(c); });
  }
}

TEST_SUITE("performance") {
  TEST_CASE("histogram throughput against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      PerfBuffers buffers(c);
      labkit::measure_performance(c, double(c.n),
                                  perf_subject(labkit::student<decltype(histogram)>("histogram"), c, buffers),
                                  perf_subject(labkit::reference<decltype(histogram)>("histogram"), c, buffers),
                                  {"cub::DeviceHistogram::HistogramEven", perf_subject(std::ref(buffers.cub), c, buffers)});
    });
  }
}
