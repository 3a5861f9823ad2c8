// Lab 10 checks: the student's quicksort against a CPU sort on every dataset case (every key
// exact, nothing written past d_keys + n or past the temporary storage it asked for), then
// its speed against the reference solution's on the performance cases. A call that does not
// return within the harness's per-call limit is the chapter kernel's typical failure: the
// hint then names what made it slow on this case's input.
#include "quicksort.h"

#include <labkit/lab.h>

#include <algorithm>
#include <functional>
#include <sstream>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using labkit::Distribution;
using Keys = std::vector<uint32_t>;
constexpr uint32_t poison_word = 0x01010101u * labkit::poison_byte;  // 0xA5A5A5A5
constexpr size_t guard_words = 64;        // poisoned words after d_keys[n): a write there is caught
constexpr size_t temp_guard_bytes = 256;  // poisoned bytes after the temporary storage

// The contract's ceiling on temporary storage: 8 bytes per key plus 64 MiB.
size_t max_temp_bytes(size_t n) { return 8 * n + (size_t(64) << 20); }

// ---- inputs and the expected output -----------------------------------------------------

bool is_organ_pipe(const Case& c) { return c.has("pattern") && c.params.at("pattern") == "organ_pipe"; }

// Ascending keys at the front, then descending: the largest key lands in the middle of the
// array, and stays near the middle of every segment a middle-key partition makes.
Keys organ_pipe(Keys keys) {
  std::sort(keys.begin(), keys.end());
  Keys pipe;
  pipe.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); i += 2) pipe.push_back(keys[i]);
  for (size_t i = keys.size() - (keys.size() % 2 == 0 ? 1 : 2); i < keys.size(); i -= 2) pipe.push_back(keys[i]);
  return pipe;
}

// The dataset's generators, plus the lab's `pattern: organ_pipe`.
Keys make_input(const Case& c, uint64_t seed_shift = 0) {
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  Keys keys = labkit::generate<uint32_t>(c.n, spec);
  return is_organ_pipe(c) ? organ_pipe(std::move(keys)) : keys;
}

// A plain LSD counting sort, one byte at a time: the same result as std::sort for uint32_t,
// in four linear passes, so the large cases stay quick on the CPU.
Keys cpu_sort(Keys keys) {
  if (keys.size() < (size_t(1) << 16)) {
    std::sort(keys.begin(), keys.end());
    return keys;
  }
  Keys other(keys.size());
  for (int shift = 0; shift < 32; shift += 8) {
    size_t start[257] = {};
    for (uint32_t key : keys) ++start[((key >> shift) & 255) + 1];
    for (int d = 0; d < 256; ++d) start[d + 1] += start[d];
    for (uint32_t key : keys) other[start[(key >> shift) & 255]++] = key;
    keys.swap(other);
  }
  return keys;
}

// ---- naming the mistake -----------------------------------------------------------------

std::string hex(uint32_t x) {
  std::ostringstream out;
  out << "0x" << std::hex << x;
  return out.str();
}

const char* parallel_partition_hint =
    "(hint: partition each large segment with a whole block or grid, pick the pivot as a median of sampled keys, "
    "partition three ways (<, ==, >), and sort short segments in shared memory: README)";

// What makes a one-thread-per-segment quicksort never finish on this case's input.
std::string why_too_slow(const Case& c) {
  const Distribution d = c.input.distribution;
  std::string why;
  if (is_organ_pipe(c))
    why = "on an organ-pipe input the middle key of every segment is its largest, so each split peels off a few "
          "keys; the recursion reaches MAX_DEPTH with almost every key left, and the chapter's fallback sorts that "
          "segment with one thread's selection sort: O(n^2) steps. Pick the pivot from several sampled keys (their "
          "median), and let the depth limit fall back to something O(n log n), never to a one-thread O(n^2) sort";
  else if (d == Distribution::sorted_ascending || d == Distribution::sorted_descending)
    why = "on sorted input a pivot taken from the first or last key (or any fixed place that holds an extreme key) "
          "splits off one key per level: the recursion is n levels deep, or it hits the depth limit and a single "
          "thread sorts almost all keys in O(n^2). Take the pivot as the median of sampled keys";
  else if (d == Distribution::all_same || d == Distribution::few_distinct)
    why = "with many equal keys a two-way partition (< pivot | >= pivot) keeps splitting runs of equal keys: "
          "the recursion never gets shorter, or one side gets everything, O(n^2) in all. A three-way partition "
          "(<, ==, >) removes every key equal to the pivot at once, so all-equal input takes one pass";
  else
    why = "a segment partitioned by one thread is n sequential steps at the first level alone, and with random "
          "pivots some segments reach MAX_DEPTH while still large, where one thread selection-sorts them in O(m^2)";
  return why + " " + parallel_partition_hint;
}

// The harness stops a call after its per-call limit with "did not return within", and refuses
// every call after two such hangs with "earlier calls never returned" (labkit/remote.h).
bool is_hang(const std::string& message) { return message.find("did not return within") != std::string::npos; }
bool is_refused_after_hangs(const std::string& message) {
  return message.find("earlier calls never returned") != std::string::npos;
}

// The first i with keys[i] < keys[i - 1], or keys.size() when there is none.
size_t first_descent(const Keys& keys) {
  for (size_t i = 1; i < keys.size(); ++i)
    if (keys[i] < keys[i - 1]) return i;
  return keys.size();
}

// Sorted as int32 instead of uint32: the keys >= 2^31 (negative as int32) first, then the rest,
// each group in ascending order.
bool is_signed_order(const Keys& expected, const Keys& actual) {
  const size_t below_top_bit = size_t(std::lower_bound(expected.begin(), expected.end(), 0x80000000u) - expected.begin());
  if (below_top_bit == 0 || below_top_bit == expected.size()) return false;  // the same order either way
  const size_t top_bit = expected.size() - below_top_bit;
  return std::equal(expected.begin() + below_top_bit, expected.end(), actual.begin()) &&
         std::equal(expected.begin(), expected.begin() + below_top_bit, actual.begin() + top_bit);
}

// When the output is not a permutation of the input: which key's count changed.
std::string describe_count_mismatch(const Keys& expected, const Keys& actual_sorted) {
  const size_t i = size_t(std::mismatch(expected.begin(), expected.end(), actual_sorted.begin()).first - expected.begin());
  const uint32_t key = i < expected.size() && (i >= actual_sorted.size() || expected[i] < actual_sorted[i])
                           ? expected[i]
                           : actual_sorted[i];
  const auto count_in = [key](const Keys& keys) {
    const auto range = std::equal_range(keys.begin(), keys.end(), key);
    return size_t(range.second - range.first);
  };
  return "key " + hex(key) + " occurs " + std::to_string(count_in(expected)) + " times in the input and " +
         std::to_string(count_in(actual_sorted)) + " times in the output";
}

// The output holds other keys than the input: some were lost, some duplicated.
std::string diagnose_not_permutation(const Keys& input, const Keys& expected, const Keys& actual,
                                     const Keys& actual_sorted) {
  const size_t n = actual.size();
  const bool input_has_poison = std::find(input.begin(), input.end(), poison_word) != input.end();
  const size_t poisoned = input_has_poison ? 0 : size_t(std::count(actual.begin(), actual.end(), poison_word));
  std::string message = "the output is not a permutation of the input (keys were lost or duplicated: " +
                        describe_count_mismatch(expected, actual_sorted) + ")";
  if (poisoned > 0) {
    const size_t first = size_t(std::find(actual.begin(), actual.end(), poison_word) - actual.begin());
    return message + "; " + std::to_string(poisoned) + " of the n = " + std::to_string(n) + " slots hold 0xA5A5A5A5 " +
           "(what the temporary storage holds on entry), the first at index " + std::to_string(first) + ": keys " +
           "were copied back from scratch slots that no partition wrote. If segments move between d_keys and the "
           "temporary storage, every segment must end in d_keys: the keys equal to the pivot too, and a segment "
           "whose partition put nothing on one side";
  }
  return message + ": two keys were written to the same slot. In a parallel partition each thread needs its own "
                   "place: a scan of the '<' and '>' flags inside the block, plus the block's share of the "
                   "segment (one atomicAdd per block and side, or a scan over blocks), and '>' keys counted from "
                   "the segment's end";
}

// Names the likely mistake from the shape of a permutation that is not sorted. `sort` calls
// the function again, to tell a race from a deterministic mistake.
std::string diagnose_unsorted(const Keys& input, const Keys& expected, const Keys& actual,
                              const std::function<Keys(const Keys&)>& sort) {
  const size_t descent = first_descent(actual);
  const std::string where = "d_keys[" + std::to_string(descent - 1) + "] = " + hex(actual[descent - 1]) +
                            " comes before d_keys[" + std::to_string(descent) + "] = " + hex(actual[descent]);
  if (actual == input)
    return "d_keys came back unchanged: nothing was sorted (did the first kernel launch at all? check "
           "cudaGetLastError after it). " + where;
  if (std::equal(actual.begin(), actual.end(), expected.rbegin()))
    return "the keys are sorted in descending order; the contract asks for ascending";
  if (is_signed_order(expected, actual))
    return "keys >= 2^31 come first: they were compared as signed int32. The keys are unsigned: use uint32_t for "
           "keys and pivots. " + where;
  const Keys again = sort(input);
  if (again != actual)
    return "two runs on the same input gave different outputs: a race. Look for a child kernel that reads a "
           "segment before its parent's partition has finished writing it (in CDP2 a child launched by one block "
           "sees other blocks' writes only after they are published: __threadfence and a last-block ticket), a "
           "missing __syncthreads() around shared memory, or cursors in the temporary storage that were not "
           "cleared. " + where;
  // Keys already in their final place around the first descent tell a partition that was
  // right from a segment that was never sorted.
  size_t in_place = 0;
  for (size_t i = 0; i < actual.size(); ++i) in_place += actual[i] == expected[i];
  return "the output is a permutation of the input but not sorted, the same on every run (" +
         std::to_string(in_place) + " of " + std::to_string(actual.size()) + " keys are in their final place). "
         "Some segment was partitioned but never finished: a device-side launch that failed (more pending "
         "launches than cudaLimitDevRuntimePendingLaunchCount allows, 2048 by default, or more than 24 levels of "
         "nesting: check cudaGetLastError() after launching from a kernel), or children whose ranges do not cover "
         "the whole segment. " + where;
}

// ---- correctness ------------------------------------------------------------------------

struct SortOutput {
  Keys keys;                   // d_keys[0..n)
  bool guard_written = false;  // a word past d_keys + n changed
  size_t guard_index = 0;      // the first one that did
  bool temp_overrun = false;   // a byte past d_temp + temp_bytes changed
};

size_t query_temp_bytes(size_t n) {
  return labkit::student<decltype(quicksort_temp_bytes)>("quicksort_temp_bytes")(n);
}

// Sorts `input` with the student's function, `temp_bytes` of poisoned temporary storage and
// poisoned guards after both buffers.
SortOutput run_student_sort(const Keys& input, size_t temp_bytes) {
  Keys with_guard = input;
  with_guard.resize(input.size() + guard_words, poison_word);
  DeviceBuffer<uint32_t> d_keys(with_guard);
  DeviceBuffer<uint8_t> d_temp(temp_bytes + temp_guard_bytes);
  d_temp.poison();
  labkit::student<decltype(quicksort)>("quicksort")(d_keys.data(), input.size(), d_temp.data(), temp_bytes, nullptr);
  CUDA_CHECK_KERNELS(nullptr);

  SortOutput result;
  result.keys = d_keys.download();
  const auto guard = std::find_if(result.keys.begin() + input.size(), result.keys.end(),
                                  [](uint32_t v) { return v != poison_word; });
  result.guard_written = guard != result.keys.end();
  result.guard_index = size_t(guard - result.keys.begin());
  result.keys.resize(input.size());

  std::vector<uint8_t> temp_guard(temp_guard_bytes);
  CUDA_CHECK(cudaMemcpy(temp_guard.data(), d_temp.data() + temp_bytes, temp_guard_bytes, cudaMemcpyDeviceToHost));
  result.temp_overrun = std::any_of(temp_guard.begin(), temp_guard.end(),
                                    [](uint8_t b) { return b != labkit::poison_byte; });
  return result;
}

// run_student_sort, with a hang turned into the case's diagnosis.
SortOutput run_student_sort_explained(const Case& c, const Keys& input, size_t temp_bytes) {
  try {
    return run_student_sort(input, temp_bytes);
  } catch (const labkit::SubmissionFailure& failure) {
    const std::string message = failure.what();
    if (is_hang(message))
      throw labkit::SubmissionFailure(message + ". On " + std::to_string(c.n) + " keys, " + why_too_slow(c),
                                      failure.outcome());
    if (is_refused_after_hangs(message))
      throw labkit::SubmissionFailure(message + " (the first cases that were stopped say why; fix those first)",
                                      failure.outcome());
    throw;
  }
}

void check_sort(const Case& c) {
  const Keys input = make_input(c);
  const Keys expected = cpu_sort(input);
  labkit::export_array(c, "input", input);
  labkit::export_array(c, "expected_output", expected);

  const size_t temp_bytes = query_temp_bytes(c.n);
  if (temp_bytes > max_temp_bytes(c.n))
    return labkit::verdict(c, false, "quicksort_temp_bytes(" + std::to_string(c.n) + ") asked for " +
                                         std::to_string(temp_bytes) + " bytes; the contract allows at most 8 x n + "
                                         "64 MiB = " + std::to_string(max_temp_bytes(c.n)) + " bytes");
  const SortOutput result = run_student_sort_explained(c, input, temp_bytes);
  if (result.guard_written)
    return labkit::verdict(c, false, "quicksort wrote d_keys[" + std::to_string(result.guard_index) +
                                         "], past the end d_keys + n (n = " + std::to_string(c.n) + "): a "
                                         "partition or the sort of the last segment must stop at n (the right "
                                         "end of a segment is exclusive, or n - 1 inclusive)");
  if (result.temp_overrun)
    return labkit::verdict(c, false, "quicksort wrote past d_temp + temp_bytes (temp_bytes = " +
                                         std::to_string(temp_bytes) + ", what quicksort_temp_bytes(" +
                                         std::to_string(c.n) + ") returned): ask for all the space you use");

  const labkit::Comparison comparison = labkit::compare_exact(expected, result.keys);
  if (comparison.ok()) return labkit::verdict(c, true);
  const auto sort = [temp_bytes](const Keys& in) { return run_student_sort(in, temp_bytes).keys; };
  const Keys actual_sorted = cpu_sort(result.keys);
  const std::string diagnosis = actual_sorted == expected
                                    ? diagnose_unsorted(input, expected, result.keys, sort)
                                    : diagnose_not_permutation(input, expected, result.keys, actual_sorted);
  labkit::verdict(c, false, diagnosis + ". " + comparison.describe());
}

// ---- performance ------------------------------------------------------------------------

// make_input(c) with `seed` for the case's, drawn on the GPU: the same keys for the same seed.
// The sorted distributions and the organ pipe start from sorted keys, which are made on the
// CPU only: no performance case uses them yet, and one that does fails here, loudly.
void draw_input(const Case& c, uint32_t* out, uint64_t seed, cudaStream_t stream) {
  if (is_organ_pipe(c))
    throw std::invalid_argument("case " + c.name + ": organ_pipe keys are not drawn on the GPU, so a performance "
                                "case cannot use them");
  labkit::InputSpec spec = c.input;
  spec.seed = seed;
  labkit::generate_on_device(out, c.n, spec, stream);
}

// One side's temporary storage, of the size that side asked for.
struct PerfTemp {
  size_t bytes = 0;
  DeviceBuffer<uint8_t> buffer;
};

PerfTemp reference_temp(size_t n) {
  const size_t bytes = labkit::reference<decltype(quicksort_temp_bytes)>("quicksort_temp_bytes")(n);
  return {bytes, DeviceBuffer<uint8_t>(bytes)};
}

// A timed call's buffers: keys of the case's shape drawn afresh for every call
// (labkit/fresh_input.h), which the call sorts in place, and the checks' own copy of them,
// sorted by the reference in storage of its own.
struct PerfBuffers {
  explicit PerfBuffers(const Case& c)
      : keys(c.n, [&c](uint32_t* out, uint64_t seed, cudaStream_t stream) { draw_input(c, out, seed, stream); }),
        expected(c.n), expected_temp(reference_temp(c.n)) {}

  // The drawn keys, sorted by the reference.
  Keys sorted_by_reference() {
    labkit::copy_on_device(expected.data(), keys.drawn(), expected.bytes(), expected.device());
    labkit::reference<decltype(quicksort)>("quicksort")(expected.data(), expected.size(), expected_temp.buffer.data(),
                                                        expected_temp.bytes, nullptr);
    return expected.download();
  }

  labkit::FreshInput<uint32_t> keys;
  DeviceBuffer<uint32_t> expected;
  PerfTemp expected_temp;
};

labkit::PerfSubject perf_subject(labkit::Function<decltype(quicksort)> fn, const Case& c, PerfBuffers& b,
                                 PerfTemp& temp) {
  // In place: the keys are the call's input and its output.
  labkit::TimedCall call = labkit::timed_call(
      [fn, &c, &b, &temp](cudaStream_t stream) { fn(b.keys.data(), c.n, temp.buffer.data(), temp.bytes, stream); },
      {&b.keys}, {&b.keys});
  call.prepare = [draw = call.prepare, &temp](int sample) {
    draw(sample);
    temp.buffer.poison();  // the contract's garbage on entry
  };
  return {call, [&b] { return labkit::compare_exact(b.sorted_by_reference(), b.keys.collected()).describe(); }};
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("quicksort matches a CPU sort") {
    for (const Case& c : labkit::dataset().correctness) {
      SUBCASE(c.name.c_str()) { labkit::run_case(c, [&] { check_sort(c); }); }
    }
  }
}

TEST_SUITE("performance") {
  TEST_CASE("quicksort throughput against the reference") {
    for (const Case& c : labkit::dataset().performance) {
      SUBCASE(c.name.c_str()) {
        if (!labkit::timing_wanted(c)) continue;  // before making its large inputs
        PerfBuffers buffers(c);
        const size_t student_bytes = query_temp_bytes(c.n);
        if (student_bytes > max_temp_bytes(c.n))
          throw std::runtime_error("quicksort_temp_bytes asked for more than 8 x n + 64 MiB bytes");
        PerfTemp student_temp{student_bytes, DeviceBuffer<uint8_t>(student_bytes)};
        PerfTemp reference_side_temp = reference_temp(c.n);
        // A sort must read and write every key at least once: 8 bytes per key is the floor
        // (GB/s here is a lower bound on what moved, not a roofline).
        const double bytes_moved = 2.0 * sizeof(uint32_t) * double(c.n);
        labkit::measure_performance(
            c, bytes_moved,
            perf_subject(labkit::student<decltype(quicksort)>("quicksort"), c, buffers, student_temp),
            perf_subject(labkit::reference<decltype(quicksort)>("quicksort"), c, buffers, reference_side_temp));
      }
    }
  }
}
