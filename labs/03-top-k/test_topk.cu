// Lab 03 checks: the student's topk against std::nth_element + std::sort on every dataset
// case, then its speed against the reference solution's on the performance cases.
#include "cub_sort_topk.cuh"
#include "topk.h"

#include <labkit/device_compare.cuh>
#include <labkit/lab.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using Values = std::vector<int32_t>;
constexpr int32_t poison_value = int32_t(0x01010101u * labkit::poison_byte);

// A case's k is a number, or "n" for the whole input.
int case_k(const Case& c) {
  const auto it = c.params.find("k");
  if (it != c.params.end() && it->second == "n") return int(c.n);
  return int(c.integer("k"));
}

// The k largest, largest first: what std::partial_sort with std::greater leaves in front. Each
// core keeps the k largest of its share of the input, and the answer is the k largest of those
// candidates: on one core a 2^28 input takes seconds, and the class waits for it.
Values cpu_topk(const Values& input, int k) {
  const auto largest_first = std::greater<int32_t>();
  const size_t keep = size_t(k);
  std::mutex candidates_lock;
  Values candidates;
  labkit::parallel_chunks(input.size(), [&](size_t begin, size_t end) {
    Values share(input.begin() + std::ptrdiff_t(begin), input.begin() + std::ptrdiff_t(end));
    if (share.size() > keep) {
      std::nth_element(share.begin(), share.begin() + std::ptrdiff_t(keep - 1), share.end(), largest_first);
      share.resize(keep);
    }
    const std::lock_guard<std::mutex> hold(candidates_lock);
    candidates.insert(candidates.end(), share.begin(), share.end());
  });
  std::nth_element(candidates.begin(), candidates.begin() + (k - 1), candidates.end(), largest_first);
  std::sort(candidates.begin(), candidates.begin() + k, largest_first);
  candidates.resize(keep);
  return candidates;
}

std::map<int32_t, size_t> multiplicities(const Values& values) {
  std::map<int32_t, size_t> counts;
  for (int32_t v : values) ++counts[v];
  return counts;
}

const char* const k_limit_hint = "hint: if this happens only above some k, what limits k: shared memory per block?";

// Names the likely mistake from the shape of the error.
std::string diagnose(const Values& expected, const Values& actual, int k) {
  if (std::all_of(actual.begin(), actual.end(), [](int32_t v) { return v == poison_value; }))
    return "d_out still holds what it held before the call (k = " + std::to_string(k) + "); " + k_limit_hint;
  Values sorted = actual;
  std::sort(sorted.begin(), sorted.end(), std::greater<int32_t>());
  if (sorted == expected) return "the right values in the wrong order: d_out must be sorted largest first";
  const auto want = multiplicities(expected), got = multiplicities(actual);
  const bool has_every_value = std::all_of(want.begin(), want.end(), [&](const auto& entry) {
    return got.count(entry.first) != 0;
  });
  const bool too_few_copies = std::any_of(want.begin(), want.end(), [&](const auto& entry) {
    const auto it = got.find(entry.first);
    return it != got.end() && it->second < entry.second;
  });
  if (has_every_value && too_few_copies)
    return "the right values but too few copies of some: duplicates are being dropped (equal values count "
           "separately: {7, 3, 7} with k = 2 gives {7, 7})";
  if (too_few_copies || !has_every_value)
    return "values of the top k are missing: duplicates are being dropped or some values never reach the "
           "final merge";
  return "wrong values: compare with std::partial_sort on a small input";
}

void check_topk(const Case& c) {
  const int k = case_k(c);
  const Values input = labkit::generate<int32_t>(c.n, c.input);
  const Values expected = cpu_topk(input, k);
  labkit::export_array(c, "input", input);
  labkit::export_array(c, "expected_topk", expected);

  DeviceBuffer<int32_t> d_in(input);
  DeviceBuffer<int32_t> d_out{size_t(k)};
  d_out.poison();
  try {
    labkit::student<decltype(topk)>("topk")(d_in.data(), c.n, k, d_out.data(), nullptr);
    CUDA_CHECK_KERNELS(nullptr);
  } catch (const labkit::CudaError& error) {
    labkit::verdict(c, false, std::string(error.what()) + " (k = " + std::to_string(k) + "); " + k_limit_hint);
    return;
  }
  const Values actual = d_out.download();
  if (d_in.download() != input) {
    labkit::verdict(c, false, "d_in was modified: topk must leave its input as it found it");
    return;
  }
  const labkit::Comparison comparison = labkit::compare_exact(expected, actual);
  labkit::verdict(c, comparison.ok(),
                  comparison.ok() ? "" : diagnose(expected, actual, k) + ". " +
                      comparison.describe([](size_t i) { return "d_out[" + std::to_string(i) + "]"; }));
}

// A timed call's buffers: an input drawn afresh in the case's distribution for every call
// (labkit/fresh_input.h), the k values it writes, and the reference's for the same input.
struct PerfBuffers {
  explicit PerfBuffers(const Case& c)
      : k(case_k(c)), input(c.n, c.input), out(size_t(k)), expected(size_t(k)), cub(c.n) {}
  int k;
  labkit::FreshInput<int32_t> input;
  labkit::TimedOutput<int32_t> out;
  DeviceBuffer<int32_t> expected;
  CubSortTopK cub;
};

labkit::PerfSubject perf_subject(labkit::Function<decltype(topk)> fn, const Case& c, PerfBuffers& b) {
  return {labkit::timed_call([fn, &c, &b](cudaStream_t stream) { fn(b.input.data(), c.n, b.k, b.out.data(), stream); },
                             {&b.input}, {&b.out}),
          [&c, &b] {
            labkit::reference<decltype(topk)>("topk")(b.input.drawn(), c.n, b.k, b.expected.data(), nullptr);
            return labkit::compare_exact_on_device(b.expected.data(), b.out.collected_data(), size_t(b.k)).describe();
          }};
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("topk matches std::partial_sort") {
    labkit::for_each_correctness_case([](const Case& c) { check_topk(c); });
  }
}

TEST_SUITE("performance") {
  TEST_CASE("topk time against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      PerfBuffers buffers(c);
      // The floor is one read of the input: n * 4 bytes.
      labkit::measure_performance(c, double(c.n) * sizeof(int32_t),
                                  perf_subject(labkit::student<decltype(topk)>("topk"), c, buffers),
                                  perf_subject(labkit::reference<decltype(topk)>("topk"), c, buffers),
                                  {"cub::DeviceRadixSort (full sort)", perf_subject(std::ref(buffers.cub), c, buffers)});
    });
  }
}
