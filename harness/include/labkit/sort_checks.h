// The checks that the sorting labs (09 radix sort, 10 quicksort) share: one contract shape,
//   size_t NAME_temp_bytes(size_t n);
//   void NAME(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream);
// sorting unsigned 32-bit keys in place, ascending, with at most 8 x n + 64 MiB of temporary
// storage. The case loop's body for correctness (every key exact, nothing written past d_keys
// + n or past the storage asked for) and for speed lives here; what differs, each lab's inputs
// and its diagnoses of a wrong answer, is handed in as a SortLab.
#pragma once

#include <labkit/lab.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace labkit::sort_checks {

using Keys = std::vector<std::uint32_t>;
inline constexpr std::uint32_t poison_word = 0x01010101u * poison_byte;  // 0xA5A5A5A5

// The contract's two functions.
using SortFunction = void(std::uint32_t* d_keys, std::size_t n, void* d_temp, std::size_t temp_bytes,
                          cudaStream_t stream);
using TempBytesFunction = std::size_t(std::size_t n);

// A library sort in the contract's shape, timed beside the reference for the reports
// (measure_performance's LibraryAnchor).
struct LibrarySort {
  std::string name;  // "cub::DeviceRadixSort::SortKeys"
  TempBytesFunction* temp_bytes = nullptr;
  SortFunction* sort = nullptr;
};

// The lab's own part of the checks.
struct SortLab {
  std::string sort;        // the contract's function names: "radix_sort"
  std::string temp_bytes;  // "radix_sort_temp_bytes"
  // The case's keys on the CPU, and the same keys drawn on the GPU for a timed call.
  std::function<Keys(const Case&)> make_input;
  std::function<void(const Case&, std::uint32_t* out, std::uint64_t seed, cudaStream_t)> draw_input;
  // Why a write past d_keys + n happens in this lab's design, after "...past the end: ".
  std::string past_end_hint;
  // The likely mistake behind an output that is not a permutation of the input, and behind a
  // permutation that is not sorted (`sort_again` runs the student's sort once more).
  std::function<std::string(const Keys& input, const Keys& expected, const Keys& actual, const Keys& actual_sorted)>
      diagnose_not_permutation;
  std::function<std::string(const Keys& input, const Keys& expected, const Keys& actual,
                            const std::function<Keys(const Keys&)>& sort_again)>
      diagnose_unsorted;
  // Optional: the lab's explanation of a call that failed (lab 10: a hang names what made the
  // input slow); throws the explained failure, or returns to let the original one through.
  std::function<void(const Case&, const SubmissionFailure&)> explain_failure;
  // Device-memory traffic a performance case counts per key (a floor, for GB/s).
  double bytes_moved_per_key = 8;
  LibrarySort library;
};

// std::sort's result for uint32_t keys, in four linear passes for large inputs.
Keys cpu_sort(Keys keys);

std::string hex(std::uint32_t x);

// The first i with keys[i] < keys[i - 1], or keys.size() when there is none.
std::size_t first_descent(const Keys& keys);

// Sorted as int32 instead of uint32: the keys >= 2^31 first, then the rest, each ascending.
bool is_signed_order(const Keys& expected, const Keys& actual);

// When the output is not a permutation of the input: which key's count changed.
std::string describe_count_mismatch(const Keys& expected, const Keys& actual_sorted);

// One correctness case: exactly one verdict.
void check_sort(const SortLab& lab, const Case& c);

// One performance case: the student's sort against the reference's on keys drawn afresh for
// every call.
void time_sort(const SortLab& lab, const Case& c);

}  // namespace labkit::sort_checks
