// Lab 10 checks: the student's quicksort against a CPU sort on every dataset case (every key
// exact, nothing written past d_keys + n or past the temporary storage it asked for), then
// its speed against the reference solution's on the performance cases. A call that does not
// return within the harness's per-call limit is the chapter kernel's typical failure: the
// hint then names what made it slow on this case's input. The checks shared with lab 09 are
// in labkit/sort_checks.h; what is here is this lab's inputs and diagnoses.
#include "cub_merge_sort.cuh"
#include "organ_pipe.h"
#include "quicksort.h"

#include <labkit/lab.h>
#include <labkit/sort_checks.h>

#include <algorithm>
#include <functional>

namespace {

using labkit::Case;
using labkit::Distribution;
using namespace labkit::sort_checks;

// ---- inputs and the expected output -----------------------------------------------------

// The dataset's generators, plus the lab's `pattern: organ_pipe`.
Keys make_input(const Case& c) {
  Keys keys = labkit::generate<uint32_t>(c.n, c.input);
  return organ_pipe::wanted(c) ? organ_pipe::arrange(std::move(keys)) : keys;
}

// ---- naming the mistake -----------------------------------------------------------------

const char* parallel_partition_hint =
    "(hint: partition each large segment with a whole block or grid, pick the pivot as a median of sampled keys, "
    "partition three ways (<, ==, >), and sort short segments in shared memory: README)";

// What makes a one-thread-per-segment quicksort never finish on this case's input.
std::string why_too_slow(const Case& c) {
  const Distribution d = c.input.distribution;
  std::string why;
  if (organ_pipe::wanted(c))
    why = "on an organ-pipe input the middle key is the largest or second-largest key, and each partition's "
          "swaps leave the next segment's second-largest key in its middle, so each split peels off one or two "
          "keys; the recursion reaches MAX_DEPTH with almost every key left, and the chapter's fallback sorts that "
          "segment with one thread's selection sort: O(n^2) steps. Pick the pivot from several sampled keys (their "
          "median), and let the depth limit fall back to something O(n log n), never to a one-thread O(n^2) sort";
  else if (d == Distribution::sorted_ascending || d == Distribution::sorted_descending)
    why = "on sorted input a pivot taken from the first or last key (or any fixed place that holds an extreme key) "
          "splits off one key per level: the recursion is n levels deep, or it hits the depth limit and a single "
          "thread sorts almost all keys in O(n^2). Take the pivot as the median of sampled keys";
  else if (d == Distribution::all_same || d == Distribution::few_distinct)
    why = "with many equal keys a two-way partition that puts every key equal to the pivot on one side "
          "(< pivot | >= pivot) takes one key off a run of equal keys per level: n levels, O(n^2) work in all, "
          "past any depth limit. A three-way partition (<, ==, >) removes every key equal to the pivot at once, "
          "so all-equal input takes one pass";
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

// A call stopped at the per-call limit is the chapter kernel's typical failure: the message
// then says what made this case's input slow.
void explain_hang(const Case& c, const labkit::SubmissionFailure& failure) {
  const std::string message = failure.what();
  if (is_hang(message))
    throw labkit::SubmissionFailure(message + ". On " + std::to_string(c.n) + " keys, " + why_too_slow(c),
                                    failure.outcome());
  if (is_refused_after_hangs(message))
    throw labkit::SubmissionFailure(message + " (the first cases that were stopped say why; fix those first)",
                                    failure.outcome());
}

// ---- performance ------------------------------------------------------------------------

// make_input(c) with `seed` for the case's, drawn on the GPU: the same keys for the same seed.
// The sorted distributions and the organ pipe start from sorted keys, which are made on the
// CPU only: no performance case uses them yet, and one that does fails here, loudly.
void draw_input(const Case& c, uint32_t* out, uint64_t seed, cudaStream_t stream) {
  if (organ_pipe::wanted(c))
    throw std::invalid_argument("case " + c.name + ": organ_pipe keys are not drawn on the GPU, so a performance "
                                "case cannot use them");
  labkit::InputSpec spec = c.input;
  spec.seed = seed;
  labkit::generate_on_device(out, c.n, spec, stream);
}

const SortLab quicksort_lab{
    "quicksort",
    "quicksort_temp_bytes",
    make_input,
    draw_input,
    "a partition or the sort of the last segment must stop at n (the right end of a segment is exclusive, or "
    "n - 1 inclusive)",
    diagnose_not_permutation,
    diagnose_unsorted,
    explain_hang,
    // A sort must read and write every key at least once: 8 bytes per key is the floor (GB/s
    // here is a lower bound on what moved, not a roofline).
    2.0 * sizeof(uint32_t),
    {"cub::DeviceMergeSort::SortKeys", cub_merge_sort::temp_bytes, cub_merge_sort::sort},
};

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("quicksort matches a CPU sort") {
    labkit::for_each_correctness_case([](const Case& c) { check_sort(quicksort_lab, c); });
  }
}

TEST_SUITE("performance") {
  TEST_CASE("quicksort throughput against the reference") {
    labkit::for_each_timed_case([](const Case& c) { time_sort(quicksort_lab, c); });
  }
}
