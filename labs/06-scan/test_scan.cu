// Lab 06 checks: the student's inclusive scan against a CPU scan on every dataset case
// (every element exact, nothing written outside d_out[0..n)), then its speed against the
// reference solution's on the performance cases.
#include "cub_scan.cuh"
#include "scan.h"

#include <labkit/device_compare.cuh>
#include <labkit/lab.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using Values = std::vector<int32_t>;
constexpr int32_t poison_word = int32_t(0x01010101u * labkit::poison_byte);  // 0xA5A5A5A5
constexpr size_t guard_words = 64;  // poisoned words after d_out[n): a write there is caught

// ---- inputs and the expected output -----------------------------------------------------

// The dataset's generators, plus one pattern of the lab's own: `pattern: alternating_signs`
// makes element i positive for even i and negative for odd i, so the running sum swings.
Values make_input(const Case& c, uint64_t seed_shift = 0) {
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  Values in = labkit::generate<int32_t>(c.n, spec);
  if (c.has("pattern") && c.params.at("pattern") == "alternating_signs")
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t magnitude = std::llabs(int64_t(in[i]));  // int64: |INT32_MIN| does not fit an int32
      in[i] = int32_t(uint32_t(i % 2 == 0 ? magnitude : -magnitude));
    }
  return in;
}

// Wrapping arithmetic, exactly as the contract states the result.
Values cpu_inclusive_scan(const Values& in) {
  Values out(in.size());
  uint32_t sum = 0;
  for (size_t i = 0; i < in.size(); ++i) out[i] = int32_t(sum += uint32_t(in[i]));
  return out;
}

// ---- naming the mistake -----------------------------------------------------------------

std::string show_element(const Values& expected, const Values& actual, size_t i) {
  return "d_out[" + std::to_string(i) + "] is " + std::to_string(actual[i]) + ", expected " +
         std::to_string(expected[i]);
}

size_t first_mismatch(const Values& expected, const Values& actual) {
  return size_t(std::mismatch(expected.begin(), expected.end(), actual.begin()).first - expected.begin());
}

bool is_exclusive_scan(const Values& expected, const Values& actual) {
  if (actual[0] != 0) return false;
  for (size_t i = 1; i < actual.size(); ++i)
    if (actual[i] != expected[i - 1]) return false;
  return true;
}

// True when `actual` is what scanning each aligned chunk of `chunk` elements on its own gives.
bool is_chunk_wise_scan(const Values& expected, const Values& actual, size_t chunk) {
  for (size_t i = chunk; i < actual.size(); ++i) {
    const uint32_t before_chunk = uint32_t(expected[i / chunk * chunk - 1]);
    if (uint32_t(actual[i]) != uint32_t(expected[i]) - before_chunk) return false;
  }
  return true;
}

// The chunk size for which `actual` is a chunk-wise scan, or 0. Such a scan is right up to
// the end of the first chunk, so only chunks no longer than the right prefix are tried.
size_t chunk_wise_scan_size(const Values& expected, const Values& actual, size_t first_wrong) {
  for (size_t chunk = 32; chunk <= first_wrong && chunk < actual.size(); chunk *= 2)
    if (is_chunk_wise_scan(expected, actual, chunk)) return chunk;
  if (first_wrong % 32 == 0 && first_wrong > 0 && is_chunk_wise_scan(expected, actual, first_wrong))
    return first_wrong;  // a chunk that is not a power of two, such as 3 x 256
  return 0;
}

bool is_power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

// The first index where the exact running sum leaves the int32 range, or n if it never does.
size_t first_overflow(const Values& in) {
  int64_t sum = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    sum += in[i];
    if (sum > INT32_MAX || sum < INT32_MIN) return i;
  }
  return in.size();
}

const char* global_scan_hint =
    "(hint: scan each block, scan the block sums, add them back; the README's \"global scan\")";

// Calls the student's scan on `input` and returns what it wrote to d_out[0..n).
using ScanCall = std::function<Values(const Values& input)>;

// The output is right up to `scanned` and never written from there to n. Either one block's
// worth was scanned, or the last, partial tile was skipped: the same input repeated to
// 4 x `scanned` elements (whole blocks only) tells them apart.
std::string diagnose_unwritten_tail(const Values& in, size_t scanned, const ScanCall& scan) {
  const std::string one_block =
      "only one block's worth of " + std::to_string(scanned) + " elements was scanned (the chapter's single "
      "block: 2 x BLOCK_DIM = 2048 elements) " + global_scan_hint + ". If you already scan in blocks, check the "
      "step that scans the block sums: it may handle only one block's worth of them";
  constexpr size_t largest_probe = size_t(1) << 26;
  if (4 * scanned > largest_probe) return one_block;
  Values longer(4 * scanned);
  for (size_t i = 0; i < longer.size(); ++i) longer[i] = in[i % in.size()];
  const Values expected = cpu_inclusive_scan(longer);
  const Values actual = scan(longer);
  if (actual == expected)
    return "the last, partial tile was never written: the same input repeated to n = " +
           std::to_string(longer.size()) + " (whole tiles) is scanned right, so elements past the last multiple of " +
           "the tile size are skipped (hint: the last block must scan and store up to n, element by element)";
  if (first_mismatch(expected, actual) == scanned)
    return one_block + " (on n = " + std::to_string(longer.size()) + " too, it stops at element " +
           std::to_string(scanned) + ")";
  return one_block;
}

// Names the likely mistake from the shape of a wrong output. `scan` calls the function again,
// to tell a race from a deterministic mistake, or to try a telling input.
std::string diagnose(const Values& in, const Values& expected, const Values& actual, const ScanCall& scan) {
  const size_t n = actual.size();
  const size_t poisoned = size_t(std::count(actual.begin(), actual.end(), poison_word));
  if (poisoned == n)
    return "d_out was not written at all: every element still holds the 0xA5A5A5A5 the checks filled it with";
  if (is_exclusive_scan(expected, actual))
    return "this is an exclusive scan: d_out[i] holds the sum of the elements before i, and the contract asks for "
           "the inclusive scan, which includes in[i] itself (the output is shifted right by one)";

  const size_t wrong = first_mismatch(expected, actual);
  const std::string where = show_element(expected, actual, wrong);
  const std::string right_before = wrong == 0 ? std::string("the very first element is wrong")
                                              : "elements 0.." + std::to_string(wrong - 1) + " are right";
  if (const size_t chunk = chunk_wise_scan_size(expected, actual, wrong))
    return "each chunk of " + std::to_string(chunk) + " elements is scanned on its own: d_out[i] is the sum from " +
           "the start of i's chunk only, because the block totals were never carried into the blocks after them " +
           global_scan_hint + ". " + where;

  const bool rest_unwritten = std::all_of(actual.begin() + wrong, actual.end(), [](int32_t v) { return v == poison_word; });
  if (wrong >= 64 && is_power_of_two(wrong)) {
    if (rest_unwritten)
      return right_before + ", and from element " + std::to_string(wrong) + " on nothing was written (still " +
             "0xA5A5A5A5): " + diagnose_unwritten_tail(in, wrong, scan) + ". " + where;
    return right_before + ", and from element " + std::to_string(wrong) + " on the output is wrong: only the " +
           "first " + std::to_string(wrong) + " elements (one block's worth) were scanned right " + global_scan_hint +
           ". " + where;
  }

  if (poisoned > 0) {
    const size_t first_poison = size_t(std::find(actual.begin(), actual.end(), poison_word) - actual.begin());
    return std::to_string(poisoned) + " elements were never written (they still hold 0xA5A5A5A5), the first at index " +
           std::to_string(first_poison) + " of n = " + std::to_string(n) + ": when n is not a multiple of the " +
           "tile, the last partial tile still needs scanning and storing, element by element up to n";
  }
  if (wrong > 0 && wrong == first_overflow(in))
    return right_before + ", and element " + std::to_string(wrong) + " is where the running sum first leaves the " +
           "int32 range: the contract asks the sums to wrap around, as 32-bit unsigned additions do (do not saturate, " +
           "widen and clamp, or use floating point). " + where;

  const Values again = scan(in);
  if (again != actual)
    return "two runs on the same input gave different outputs (the first wrong element moved from " +
           std::to_string(wrong) + " to " + std::to_string(first_mismatch(expected, again)) + "): a race. Look for a "
           "missing __syncthreads() between writing and reading shared memory, or, in a single-pass scan, a tile "
           "that reads a predecessor's flag before that predecessor's value is visible (flag and value in one "
           "64-bit word, or a __threadfence() between writing the value and the flag and another between reading "
           "the flag and the value). " + where;
  return right_before + " and the output is the same on every run. " + where +
         (wrong % 32 == 0 && wrong > 0 ? ": that index starts a chunk of " + std::to_string(wrong & (~wrong + 1)) +
                                             " elements, so check what is carried into that chunk from before it"
                                       : "");
}

// ---- correctness ------------------------------------------------------------------------

// What one call wrote: d_out[0..n) followed by the guard words.
struct ScanOutput {
  Values out;
  bool input_changed = false;
};

ScanOutput run_student_scan(const Values& input) {
  DeviceBuffer<int32_t> d_in(input);
  DeviceBuffer<int32_t> d_out(input.size() + guard_words);
  d_out.poison();
  labkit::student<decltype(inclusive_scan)>("inclusive_scan")(d_in.data(), input.size(), d_out.data(), nullptr);
  CUDA_CHECK_KERNELS(nullptr);
  return {d_out.download(), d_in.download() != input};
}

void check_scan(const Case& c) {
  const Values input = make_input(c);
  const Values expected = cpu_inclusive_scan(input);
  labkit::export_array(c, "input", input);
  labkit::export_array(c, "expected_output", expected);

  ScanOutput result = run_student_scan(input);
  if (result.input_changed) {
    labkit::verdict(c, false, "inclusive_scan modified its input: d_in is const and must come back unchanged");
    return;
  }
  Values& actual = result.out;
  const auto guard_written = std::find_if(actual.begin() + c.n, actual.end(), [](int32_t v) { return v != poison_word; });
  if (guard_written != actual.end()) {
    labkit::verdict(c, false, "inclusive_scan wrote d_out[" + std::to_string(guard_written - actual.begin()) +
                                  "], past the end d_out + n (n = " + std::to_string(c.n) + "): the last tile "
                                  "must store only up to n");
    return;
  }
  actual.resize(c.n);
  const labkit::Comparison comparison = labkit::compare_exact(expected, actual);
  if (comparison.ok()) return labkit::verdict(c, true);
  const ScanCall scan = [](const Values& in) {
    Values out = run_student_scan(in).out;
    out.resize(in.size());
    return out;
  };
  labkit::verdict(c, false, diagnose(input, expected, actual, scan) + ". " + comparison.describe());
}

// ---- performance ------------------------------------------------------------------------

// make_input's `alternating_signs` on the GPU: |x| at even indices, -|x| at odd ones.
__global__ void alternate_signs_kernel(int32_t* values, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const int64_t magnitude = llabs(int64_t(values[i]));  // int64: |INT32_MIN| does not fit an int32
    values[i] = int32_t(uint32_t(i % 2 == 0 ? magnitude : -magnitude));
  }
}

// make_input(c) with `seed` for the case's, drawn on the GPU: the same data for the same seed.
void draw_input(const Case& c, int32_t* out, uint64_t seed, cudaStream_t stream) {
  labkit::InputSpec spec = c.input;
  spec.seed = seed;
  labkit::generate_on_device(out, c.n, spec, stream);
  if (c.n > 0 && c.has("pattern") && c.params.at("pattern") == "alternating_signs") {
    alternate_signs_kernel<<<unsigned(std::min<size_t>((c.n + 255) / 256, 4096)), 256, 0, stream>>>(out, c.n);
    CUDA_CHECK(cudaGetLastError());
  }
}

// A timed call's buffers: an input of the case's shape drawn afresh for every call
// (labkit/fresh_input.h), the scan it writes, and the reference's scan of the same input.
struct PerfBuffers {
  explicit PerfBuffers(const Case& c)
      : input(c.n, [&c](int32_t* out, uint64_t seed, cudaStream_t stream) { draw_input(c, out, seed, stream); }),
        out(c.n), expected(c.n), cub(c.n) {}
  labkit::FreshInput<int32_t> input;
  labkit::TimedOutput<int32_t> out;
  DeviceBuffer<int32_t> expected;
  CubInclusiveSum cub;
};

labkit::PerfSubject perf_subject(labkit::Function<decltype(inclusive_scan)> fn, const Case& c, PerfBuffers& b) {
  return {labkit::timed_call([fn, &c, &b](cudaStream_t stream) { fn(b.input.data(), c.n, b.out.data(), stream); },
                             {&b.input}, {&b.out}),
          [&c, &b] {
            labkit::reference<decltype(inclusive_scan)>("inclusive_scan")(b.input.drawn(), c.n, b.expected.data(),
                                                                          nullptr);
            return labkit::compare_exact_on_device(b.expected.data(), b.out.collected_data(), c.n).describe();
          }};
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("inclusive_scan matches a CPU scan") {
    labkit::for_each_correctness_case([](const Case& c) { check_scan(c); });
  }
}

TEST_SUITE("performance") {
  TEST_CASE("inclusive_scan throughput against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      PerfBuffers buffers(c);
      const double bytes_moved = 2.0 * sizeof(int32_t) * double(c.n);  // read n, write n
      labkit::measure_performance(
          c, bytes_moved, perf_subject(labkit::student<decltype(inclusive_scan)>("inclusive_scan"), c, buffers),
          perf_subject(labkit::reference<decltype(inclusive_scan)>("inclusive_scan"), c, buffers),
          {"cub::DeviceScan::InclusiveSum", perf_subject(std::ref(buffers.cub), c, buffers)});
    });
  }
}
