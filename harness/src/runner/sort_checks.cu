#include "labkit/sort_checks.h"

#include <labkit/device_compare.cuh>
#include <labkit/fresh_input.h>

#include "runner.h"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace labkit::sort_checks {

namespace {

constexpr std::size_t guard_words = 64;        // poisoned words after d_keys[n): a write there is caught
constexpr std::size_t temp_guard_bytes = 256;  // poisoned bytes after the temporary storage

// The contract's ceiling on temporary storage: 8 bytes per key plus 64 MiB.
std::size_t max_temp_bytes(std::size_t n) { return 8 * n + (std::size_t(64) << 20); }

std::string too_much_temp(const SortLab& lab, std::size_t n, std::size_t asked) {
  return lab.temp_bytes + "(" + std::to_string(n) + ") asked for " + std::to_string(asked) +
         " bytes; the contract allows at most 8 x n + 64 MiB = " + std::to_string(max_temp_bytes(n)) + " bytes";
}

// ---- correctness --------------------------------------------------------------------------

struct SortOutput {
  Keys keys;                   // d_keys[0..n)
  bool guard_written = false;  // a word past d_keys + n changed
  std::size_t guard_index = 0;  // the first one that did
  bool temp_overrun = false;   // a byte past d_temp + temp_bytes changed
};

// Sorts `input` with the student's function, `temp_bytes` of poisoned temporary storage and
// poisoned guards after both buffers.
SortOutput run_student_sort(const SortLab& lab, const Keys& input, std::size_t temp_bytes) {
  Keys with_guard = input;
  with_guard.resize(input.size() + guard_words, poison_word);
  DeviceBuffer<std::uint32_t> d_keys(with_guard);
  DeviceBuffer<std::uint8_t> d_temp(temp_bytes + temp_guard_bytes);
  d_temp.poison();
  student<SortFunction>(lab.sort.c_str())(d_keys.data(), input.size(), d_temp.data(), temp_bytes, nullptr);
  CUDA_CHECK_KERNELS(nullptr);

  SortOutput result;
  result.keys = d_keys.download();
  const auto guard = std::find_if(result.keys.begin() + input.size(), result.keys.end(),
                                  [](std::uint32_t v) { return v != poison_word; });
  result.guard_written = guard != result.keys.end();
  result.guard_index = std::size_t(guard - result.keys.begin());
  result.keys.resize(input.size());

  std::vector<std::uint8_t> temp_guard(temp_guard_bytes);
  CUDA_CHECK(cudaMemcpy(temp_guard.data(), d_temp.data() + temp_bytes, temp_guard_bytes, cudaMemcpyDeviceToHost));
  result.temp_overrun = std::any_of(temp_guard.begin(), temp_guard.end(),
                                    [](std::uint8_t b) { return b != poison_byte; });
  return result;
}

// The first run of a case, with the lab's explanation of a failed call.
SortOutput run_explained(const SortLab& lab, const Case& c, const Keys& input, std::size_t temp_bytes) {
  try {
    return run_student_sort(lab, input, temp_bytes);
  } catch (const SubmissionFailure& failure) {
    if (lab.explain_failure) lab.explain_failure(c, failure);
    throw;
  }
}

// The case's expected output, sorted by cub::DeviceRadixSort on the checks' own GPU: a large
// case's keys sorted on one core of the host cost the lab's time limit and the batch's far
// more. `grade export` without a GPU sorts them on the CPU.
Keys sorted_for_checks(const Keys& input) {
  constexpr std::size_t worth_the_gpu = std::size_t(1) << 16;
  if (runner::state().export_without_gpu || input.size() < worth_the_gpu) return cpu_sort(input);
  DeviceBuffer<std::uint32_t> keys(input), sorted(input.size());
  std::size_t temp_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys.data(), sorted.data(), input.size()));
  DeviceBuffer<std::uint8_t> temp(temp_bytes);
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp.data(), temp_bytes, keys.data(), sorted.data(), input.size()));
  return sorted.download();
}

// ---- performance --------------------------------------------------------------------------

// One side's temporary storage, of the size that side asked for.
struct PerfTemp {
  std::size_t bytes = 0;
  DeviceBuffer<std::uint8_t> buffer;
};

PerfTemp reference_temp(const SortLab& lab, std::size_t n) {
  const std::size_t bytes = reference<TempBytesFunction>(lab.temp_bytes.c_str())(n);
  return {bytes, DeviceBuffer<std::uint8_t>(bytes)};
}

// A timed call's buffers: keys of the case's shape drawn afresh for every call
// (labkit/fresh_input.h), which the call sorts in place, and the checks' own copy of them,
// sorted by the reference in storage of its own.
struct PerfBuffers {
  PerfBuffers(const SortLab& lab, const Case& c)
      : sort(reference<SortFunction>(lab.sort.c_str())),
        keys(c.n, [&lab, &c](std::uint32_t* out, std::uint64_t seed, cudaStream_t stream) {
          lab.draw_input(c, out, seed, stream);
        }),
        expected(c.n), expected_temp(reference_temp(lab, c.n)) {}

  // The drawn keys, sorted by the reference, in `expected`.
  const std::uint32_t* sorted_by_reference() {
    copy_on_device(expected.data(), keys.drawn(), expected.bytes(), expected.device());
    sort(expected.data(), expected.size(), expected_temp.buffer.data(), expected_temp.bytes, nullptr);
    return expected.data();
  }

  SortFunction* sort;
  FreshInput<std::uint32_t> keys;
  DeviceBuffer<std::uint32_t> expected;
  PerfTemp expected_temp;
};

PerfSubject perf_subject(Function<SortFunction> sort, const Case& c, PerfBuffers& b, PerfTemp& temp) {
  // In place: the keys are the call's input and its output.
  TimedCall call = timed_call(
      [sort, &c, &b, &temp](cudaStream_t stream) { sort(b.keys.data(), c.n, temp.buffer.data(), temp.bytes, stream); },
      {&b.keys}, {&b.keys});
  call.prepare = [draw = call.prepare, &temp](int sample) {
    draw(sample);
    temp.buffer.poison();  // the contract's garbage on entry
  };
  return {call, [&b] {
            return compare_exact_on_device(b.sorted_by_reference(), b.keys.collected_data(), b.keys.size()).describe();
          }};
}

}  // namespace

Keys cpu_sort(Keys keys) {
  if (keys.size() < (std::size_t(1) << 16)) {
    std::sort(keys.begin(), keys.end());
    return keys;
  }
  // An LSD counting sort, one byte at a time, so that the 2^26-key cases stay quick.
  Keys other(keys.size());
  for (int shift = 0; shift < 32; shift += 8) {
    std::size_t start[257] = {};
    for (std::uint32_t key : keys) ++start[((key >> shift) & 255) + 1];
    for (int d = 0; d < 256; ++d) start[d + 1] += start[d];
    for (std::uint32_t key : keys) other[start[(key >> shift) & 255]++] = key;
    keys.swap(other);
  }
  return keys;
}

std::string hex(std::uint32_t x) {
  std::ostringstream out;
  out << "0x" << std::hex << x;
  return out.str();
}

std::size_t first_descent(const Keys& keys) {
  for (std::size_t i = 1; i < keys.size(); ++i)
    if (keys[i] < keys[i - 1]) return i;
  return keys.size();
}

bool is_signed_order(const Keys& expected, const Keys& actual) {
  const std::size_t below_top_bit =
      std::size_t(std::lower_bound(expected.begin(), expected.end(), 0x80000000u) - expected.begin());
  if (below_top_bit == 0 || below_top_bit == expected.size()) return false;  // the same order either way
  const std::size_t top_bit = expected.size() - below_top_bit;
  return std::equal(expected.begin() + below_top_bit, expected.end(), actual.begin()) &&
         std::equal(expected.begin(), expected.begin() + below_top_bit, actual.begin() + top_bit);
}

std::string describe_count_mismatch(const Keys& expected, const Keys& actual_sorted) {
  const std::size_t i =
      std::size_t(std::mismatch(expected.begin(), expected.end(), actual_sorted.begin()).first - expected.begin());
  const std::uint32_t key = i < expected.size() && (i >= actual_sorted.size() || expected[i] < actual_sorted[i])
                                ? expected[i]
                                : actual_sorted[i];
  const auto count_in = [key](const Keys& keys) {
    const auto range = std::equal_range(keys.begin(), keys.end(), key);
    return std::size_t(range.second - range.first);
  };
  return "key " + hex(key) + " occurs " + std::to_string(count_in(expected)) + " times in the input and " +
         std::to_string(count_in(actual_sorted)) + " times in the output";
}

void check_sort(const SortLab& lab, const Case& c) {
  const Keys input = lab.make_input(c);
  const Keys expected = sorted_for_checks(input);
  export_array(c, "input", input);
  export_array(c, "expected_output", expected);

  const std::size_t temp_bytes = student<TempBytesFunction>(lab.temp_bytes.c_str())(c.n);
  if (temp_bytes > max_temp_bytes(c.n)) return verdict(c, false, too_much_temp(lab, c.n, temp_bytes));
  const SortOutput result = run_explained(lab, c, input, temp_bytes);
  if (result.guard_written)
    return verdict(c, false, lab.sort + " wrote d_keys[" + std::to_string(result.guard_index) +
                                 "], past the end d_keys + n (n = " + std::to_string(c.n) + "): " + lab.past_end_hint);
  if (result.temp_overrun)
    return verdict(c, false, lab.sort + " wrote past d_temp + temp_bytes (temp_bytes = " + std::to_string(temp_bytes) +
                                 ", what " + lab.temp_bytes + "(" + std::to_string(c.n) +
                                 ") returned): ask for all the space you use");

  const Comparison comparison = compare_exact(expected, result.keys);
  if (comparison.ok()) return verdict(c, true);
  const auto sort_again = [&lab, temp_bytes](const Keys& in) { return run_student_sort(lab, in, temp_bytes).keys; };
  const Keys actual_sorted = cpu_sort(result.keys);
  const std::string diagnosis = actual_sorted == expected
                                    ? lab.diagnose_unsorted(input, expected, result.keys, sort_again)
                                    : lab.diagnose_not_permutation(input, expected, result.keys, actual_sorted);
  verdict(c, false, diagnosis + ". " + comparison.describe());
}

void time_sort(const SortLab& lab, const Case& c) {
  if (!timing_wanted(c)) return;  // before making its large inputs
  PerfBuffers buffers(lab, c);
  const std::size_t student_bytes = student<TempBytesFunction>(lab.temp_bytes.c_str())(c.n);
  if (student_bytes > max_temp_bytes(c.n)) throw std::runtime_error(too_much_temp(lab, c.n, student_bytes));
  PerfTemp student_temp{student_bytes, DeviceBuffer<std::uint8_t>(student_bytes)};
  PerfTemp reference_side_temp = reference_temp(lab, c.n);
  LibraryAnchor library;
  PerfTemp library_temp;
  if (lab.library.sort != nullptr) {
    library_temp.bytes = lab.library.temp_bytes(c.n);
    library_temp.buffer = DeviceBuffer<std::uint8_t>(library_temp.bytes);
    library = {lab.library.name, perf_subject(lab.library.sort, c, buffers, library_temp)};
  }
  measure_performance(c, lab.bytes_moved_per_key * double(c.n),
                      perf_subject(student<SortFunction>(lab.sort.c_str()), c, buffers, student_temp),
                      perf_subject(reference<SortFunction>(lab.sort.c_str()), c, buffers, reference_side_temp),
                      library);
}

}  // namespace labkit::sort_checks
