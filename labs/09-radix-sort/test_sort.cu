// Lab 09 checks: the student's radix sort against a CPU sort on every dataset case (every key
// exact, nothing written past d_keys + n or past the temporary storage it asked for), then
// its speed against the reference solution's on the performance cases.
#include "sort.h"

#include <labkit/lab.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using Keys = std::vector<uint32_t>;
constexpr uint32_t poison_word = 0x01010101u * labkit::poison_byte;  // 0xA5A5A5A5
constexpr size_t guard_words = 64;        // poisoned words after d_keys[n): a write there is caught
constexpr size_t temp_guard_bytes = 256;  // poisoned bytes after the temporary storage
constexpr size_t warp_size = 32;

// The contract's ceiling on temporary storage: 8 bytes per key plus 64 MiB.
size_t max_temp_bytes(size_t n) { return 8 * n + (size_t(64) << 20); }

// ---- inputs and the expected output -----------------------------------------------------

// The dataset's generators, plus one pattern of the lab's own: `pattern: single_bit` turns
// each value v into 1 << (v % 32), keys with exactly one bit set.
Keys make_input(const Case& c, uint64_t seed_shift = 0) {
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  Keys keys = labkit::generate<uint32_t>(c.n, spec);
  if (c.has("pattern") && c.params.at("pattern") == "single_bit")
    for (uint32_t& key : keys) key = 1u << (key % 32);
  return keys;
}

// A plain LSD counting sort, one byte at a time: the same result as std::sort for uint32_t,
// in four linear passes, so the 2^26-key cases stay quick on the CPU.
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

const char* global_sort_hint =
    "(hint: a digit histogram over all keys, a scan of it, and a scatter: README)";

// The first i with keys[i] < keys[i - 1], or keys.size() when there is none.
size_t first_descent(const Keys& keys) {
  for (size_t i = 1; i < keys.size(); ++i)
    if (keys[i] < keys[i - 1]) return i;
  return keys.size();
}

// The greatest common divisor of every descent's index: an output made of sorted runs of
// `run` keys descends only at multiples of `run`. 0 when it never descends.
size_t descent_gcd(const Keys& keys) {
  size_t g = 0;
  for (size_t i = 1; i < keys.size(); ++i)
    if (keys[i] < keys[i - 1]) g = std::gcd(g, i);
  return g;
}

// True when every aligned run of `run` keys of `actual` is the same run of `input`, sorted.
bool is_run_wise_sort(const Keys& input, const Keys& actual, size_t run) {
  for (size_t first = 0; first < input.size(); first += run) {
    const size_t last = std::min(input.size(), first + run);
    Keys expected(input.begin() + first, input.begin() + last);
    std::sort(expected.begin(), expected.end());
    if (!std::equal(expected.begin(), expected.end(), actual.begin() + first)) return false;
  }
  return true;
}

// How many of the top (or bottom) bits `actual` is sorted by: the largest b such that the
// keys are in non-decreasing order of key >> (32 - b) (or of key mod 2^b).
int bits_sorted_by(const Keys& actual, bool top) {
  for (int bits = 32; bits > 0; --bits) {
    const auto part = [&](uint32_t key) {
      return top ? uint32_t(uint64_t(key) >> (32 - bits)) : uint32_t(key & ((uint64_t(1) << bits) - 1));
    };
    bool sorted = true;
    for (size_t i = 1; i < actual.size() && sorted; ++i) sorted = part(actual[i - 1]) <= part(actual[i]);
    if (sorted) return bits;
  }
  return 0;
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
  if (poisoned == n)
    return "d_keys holds 0xA5A5A5A5 everywhere: the result was written somewhere else (the temporary "
           "storage?) and d_keys was overwritten with what the temporary storage held on entry. With an odd "
           "number of passes the sorted keys end in the other buffer: copy them back, or use an even number";
  std::string message = "the output is not a permutation of the input (keys were lost or duplicated: " +
                        describe_count_mismatch(expected, actual_sorted) + ")";
  if (poisoned > 0) {
    const size_t first = size_t(std::find(actual.begin(), actual.end(), poison_word) - actual.begin());
    message += "; " + std::to_string(poisoned) + " of the n = " + std::to_string(n) + " slots hold 0xA5A5A5A5, " +
               "the first at index " + std::to_string(first) + ": the other buffer (the temporary storage) was " +
               "never written there, so some keys were scattered to the same place as others, or never scattered " +
               "(a skipped last partial tile, digit offsets from a wrong scan, or tiles that did not add the counts " +
               "of the tiles before them)";
  } else {
    message += ": two keys were scattered to the same slot. Check the scan of the digit histogram (exclusive, "
               "not inclusive), that every tile adds the counts of the tiles before it, and that ranks inside a "
               "tile are distinct";
  }
  return message;
}

// Names the likely mistake from the shape of a permutation that is not sorted. `sort` calls
// the function again, to tell a race from a deterministic mistake.
std::string diagnose_unsorted(const Keys& input, const Keys& expected, const Keys& actual,
                              const std::function<Keys(const Keys&)>& sort) {
  const size_t n = actual.size();
  const size_t descent = first_descent(actual);
  const std::string where = "d_keys[" + std::to_string(descent - 1) + "] = " + hex(actual[descent - 1]) +
                            " comes before d_keys[" + std::to_string(descent) + "] = " + hex(actual[descent]);

  if (actual == input)
    return "d_keys came back unchanged: nothing was sorted (or the sorted keys were left in the temporary "
           "storage). " + where;
  const size_t run = descent_gcd(actual);
  if (run >= 2 && run < n && is_run_wise_sort(input, actual, run)) {
    if (run == warp_size)
      return "each aligned run of 32 keys is sorted but the whole is not: a warp-level split sorts only within "
             "its warp, and no key leaves its run " + std::string(global_sort_hint) + ". " + where;
    return "each aligned run of " + std::to_string(run) + " keys is sorted but the whole is not: every block "
           "sorted its own tile, and no key left its tile. The scatter of each pass must send keys to their place "
           "in the whole array, from the digit's count over all keys and the same digit's counts in earlier tiles " +
           global_sort_hint + ". " + where;
  }
  if (std::equal(actual.begin(), actual.end(), expected.rbegin()))
    return "the keys are sorted in descending order; the contract asks for ascending";
  if (is_signed_order(expected, actual))
    return "keys >= 2^31 come first: they were ordered as signed int32 (negative numbers). The keys are unsigned: "
           "use uint32_t throughout (an int key, or a digit taken with >> from a signed value, makes the top bit "
           "the sign). " + where;

  const int top_bits = bits_sorted_by(actual, true);
  const int low_bits = bits_sorted_by(actual, false);
  if (low_bits >= 4 && low_bits > top_bits)
    return "the keys are sorted by their low " + std::to_string(low_bits) + " bits only (by key mod 2^" +
           std::to_string(low_bits) + "): only the first digit passes took effect. Check that the loop runs a pass "
           "for every digit up to bit 31, that each pass reads the previous pass's output, and that the last "
           "pass's output ends in d_keys. " + where;
  if (top_bits >= 1)
    return "the keys are sorted by their top " + std::to_string(top_bits) + " bits only, and among keys that "
           "agree on those the order is lost: the last pass was right but it did not keep the order the earlier "
           "passes made (by the last digit only). The scatter must be stable: keys with the same digit keep "
           "their relative order (ranks from a scan, not from atomicAdd, whose order is arbitrary). " + where;

  const Keys again = sort(input);
  if (again != actual)
    return "two runs on the same input gave different outputs: a race. Look for a missing __syncthreads() "
           "between writing and reading shared memory, a look-back that reads a count before it is published, or "
           "state in the temporary storage that was not cleared at the start of the call. " + where;
  return "the output is a permutation of the input but not sorted, the same on every run. " + where;
}

// ---- correctness ------------------------------------------------------------------------

struct SortOutput {
  Keys keys;                   // d_keys[0..n)
  bool guard_written = false;  // a word past d_keys + n changed
  size_t guard_index = 0;      // the first one that did
  bool temp_overrun = false;   // a byte past d_temp + temp_bytes changed
};

size_t query_temp_bytes(size_t n) {
  return labkit::student<decltype(radix_sort_temp_bytes)>("radix_sort_temp_bytes")(n);
}

// Sorts `input` with the student's function, `temp_bytes` of poisoned temporary storage and
// poisoned guards after both buffers.
SortOutput run_student_sort(const Keys& input, size_t temp_bytes) {
  Keys with_guard = input;
  with_guard.resize(input.size() + guard_words, poison_word);
  DeviceBuffer<uint32_t> d_keys(with_guard);
  DeviceBuffer<uint8_t> d_temp(temp_bytes + temp_guard_bytes);
  d_temp.poison();
  labkit::student<decltype(radix_sort)>("radix_sort")(d_keys.data(), input.size(), d_temp.data(), temp_bytes, nullptr);
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

void check_sort(const Case& c) {
  const Keys input = make_input(c);
  const Keys expected = cpu_sort(input);
  labkit::export_array(c, "input", input);
  labkit::export_array(c, "expected_output", expected);

  const size_t temp_bytes = query_temp_bytes(c.n);
  if (temp_bytes > max_temp_bytes(c.n))
    return labkit::verdict(c, false, "radix_sort_temp_bytes(" + std::to_string(c.n) + ") asked for " +
                                         std::to_string(temp_bytes) + " bytes; the contract allows at most 8 x n + "
                                         "64 MiB = " + std::to_string(max_temp_bytes(c.n)) + " bytes");
  const SortOutput result = run_student_sort(input, temp_bytes);
  if (result.guard_written)
    return labkit::verdict(c, false, "radix_sort wrote d_keys[" + std::to_string(result.guard_index) +
                                         "], past the end d_keys + n (n = " + std::to_string(c.n) + "): the last "
                                         "tile must load and store only up to n");
  if (result.temp_overrun)
    return labkit::verdict(c, false, "radix_sort wrote past d_temp + temp_bytes (temp_bytes = " +
                                         std::to_string(temp_bytes) + ", what radix_sort_temp_bytes(" +
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

// make_input's `single_bit` on the GPU: each value v becomes 1 << (v % 32).
__global__ void single_bit_kernel(uint32_t* keys, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    keys[i] = 1u << (keys[i] % 32);
}

// make_input(c) with `seed` for the case's, drawn on the GPU: the same keys for the same seed.
void draw_input(const Case& c, uint32_t* out, uint64_t seed, cudaStream_t stream) {
  labkit::InputSpec spec = c.input;
  spec.seed = seed;
  labkit::generate_on_device(out, c.n, spec, stream);
  if (c.n > 0 && c.has("pattern") && c.params.at("pattern") == "single_bit") {
    single_bit_kernel<<<unsigned(std::min<size_t>((c.n + 255) / 256, 4096)), 256, 0, stream>>>(out, c.n);
    CUDA_CHECK(cudaGetLastError());
  }
}

// One side's temporary storage, of the size that side asked for.
struct PerfTemp {
  size_t bytes = 0;
  DeviceBuffer<uint8_t> buffer;
};

PerfTemp reference_temp(size_t n) {
  const size_t bytes = labkit::reference<decltype(radix_sort_temp_bytes)>("radix_sort_temp_bytes")(n);
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
    labkit::reference<decltype(radix_sort)>("radix_sort")(expected.data(), expected.size(),
                                                          expected_temp.buffer.data(), expected_temp.bytes, nullptr);
    return expected.download();
  }

  labkit::FreshInput<uint32_t> keys;
  DeviceBuffer<uint32_t> expected;
  PerfTemp expected_temp;
};

labkit::PerfSubject perf_subject(labkit::Function<decltype(radix_sort)> fn, const Case& c, PerfBuffers& b,
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
  TEST_CASE("radix_sort matches a CPU sort") {
    for (const Case& c : labkit::dataset().correctness) {
      SUBCASE(c.name.c_str()) { labkit::run_case(c, [&] { check_sort(c); }); }
    }
  }
}

TEST_SUITE("performance") {
  TEST_CASE("radix_sort throughput against the reference") {
    for (const Case& c : labkit::dataset().performance) {
      SUBCASE(c.name.c_str()) {
        if (!labkit::timing_wanted(c)) continue;  // before making its large inputs
        PerfBuffers buffers(c);
        const size_t student_bytes = query_temp_bytes(c.n);
        if (student_bytes > max_temp_bytes(c.n))
          throw std::runtime_error("radix_sort_temp_bytes asked for more than 8 x n + 64 MiB bytes");
        PerfTemp student_temp{student_bytes, DeviceBuffer<uint8_t>(student_bytes)};
        PerfTemp reference_side_temp = reference_temp(c.n);
        // An LSD sort with 8-bit digits reads and writes every key once per pass, four passes.
        const double bytes_moved = 4.0 * 2.0 * sizeof(uint32_t) * double(c.n);
        labkit::measure_performance(
            c, bytes_moved,
            perf_subject(labkit::student<decltype(radix_sort)>("radix_sort"), c, buffers, student_temp),
            perf_subject(labkit::reference<decltype(radix_sort)>("radix_sort"), c, buffers, reference_side_temp));
      }
    }
  }
}
