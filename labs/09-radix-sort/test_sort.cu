// Lab 09 checks: the student's radix sort against a CPU sort on every dataset case (every key
// exact, nothing written past d_keys + n or past the temporary storage it asked for), then
// its speed against the reference solution's on the performance cases. The checks shared
// with lab 10 are in labkit/sort_checks.h; what is here is this lab's inputs and diagnoses.
#include "cub_radix_sort.cuh"
#include "sort.h"

#include <labkit/lab.h>
#include <labkit/sort_checks.h>

#include <algorithm>
#include <functional>
#include <numeric>

namespace {

using labkit::Case;
using namespace labkit::sort_checks;
constexpr size_t warp_size = 32;

// ---- inputs and the expected output -----------------------------------------------------

// The dataset's generators, plus one pattern of the lab's own: `pattern: single_bit` turns
// each value v into 1 << (v % 32), keys with exactly one bit set.
Keys make_input(const Case& c) {
  Keys keys = labkit::generate<uint32_t>(c.n, c.input);
  if (c.has("pattern") && c.params.at("pattern") == "single_bit")
    for (uint32_t& key : keys) key = 1u << (key % 32);
  return keys;
}

// ---- naming the mistake -----------------------------------------------------------------

const char* global_sort_hint =
    "(hint: a digit histogram over all keys, a scan of it, and a scatter: README)";

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

const SortLab radix_sort_lab{
    "radix_sort",
    "radix_sort_temp_bytes",
    make_input,
    draw_input,
    "the last tile must load and store only up to n",
    diagnose_not_permutation,
    diagnose_unsorted,
    {},
    // An LSD sort with 8-bit digits reads and writes every key once per pass, four passes.
    4.0 * 2.0 * sizeof(uint32_t),
    {"cub::DeviceRadixSort::SortKeys", cub_radix_sort::temp_bytes, cub_radix_sort::sort},
};

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("radix_sort matches a CPU sort") {
    labkit::for_each_correctness_case([](const Case& c) { check_sort(radix_sort_lab, c); });
  }
}

TEST_SUITE("performance") {
  TEST_CASE("radix_sort throughput against the reference") {
    labkit::for_each_timed_case([](const Case& c) { time_sort(radix_sort_lab, c); });
  }
}
