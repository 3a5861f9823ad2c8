// Lab 07 checks: the student's compaction, split and expansion against CPU versions on every
// dataset case (every output bit exact, the count right, nothing written past what the
// contract allows), then their speed against the reference solution's on the performance
// cases. Cases with `exercise: split` check split_positive, `exercise: expand`
// expand_positive; all others check compact_positive.
#include "compact.h"
#include "cub_compact.cuh"

#include <labkit/device_compare.cuh>
#include <labkit/lab.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using Floats = std::vector<float>;
using Bits = std::vector<uint32_t>;  // outputs are compared bit for bit: NaN, -0.0f and all
constexpr uint32_t poison_word = 0x01010101u * labkit::poison_byte;  // 0xA5A5A5A5
constexpr size_t poison_count = 0x0101010101010101ull * labkit::poison_byte;
constexpr size_t guard_words = 64;                    // poisoned words after d_out + n
constexpr size_t float_exact_limit = size_t(1) << 24;  // 16777216: where float integers end
constexpr size_t chapter_block = 2048;                 // the chapter's scan: 2 x BLOCK_DIM

const char* float_address_hint =
    "addresses computed in float are exact only to 2^24 = 16777216: positions past that are rounded, so two "
    "elements land on one slot and another slot stays empty (hint: scan integer flags in int32/uint32, not float)";

bool is_exercise(const Case& c, const char* name) { return c.has("exercise") && c.params.at("exercise") == name; }
bool is_split_case(const Case& c) { return is_exercise(c, "split"); }
bool is_expand_case(const Case& c) { return is_exercise(c, "expand"); }

Bits to_bits(const Floats& values) {
  Bits bits(values.size());
  if (!values.empty()) std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

Floats to_floats(const Bits& bits) {
  Floats values(bits.size());
  if (!bits.empty()) std::memcpy(values.data(), bits.data(), bits.size() * sizeof(float));
  return values;
}

// The arrays are floats, exported as such; converted only when a case is being exported, as the
// large cases' copies cost the checks' time.
void export_bits(const Case& c, const char* name, const Bits& bits) {
  if (!labkit::export_dir().empty()) labkit::export_array(c, name, to_floats(bits));
}

std::string show_bits(uint32_t bits) {
  char text[64];
  std::snprintf(text, sizeof text, "%g (bits 0x%08X)", double(from_bits(bits)), bits);
  return text;
}

// ---- inputs -----------------------------------------------------------------------------

// Values that test the predicate: zeros of both signs, NaNs (quiet, signalling, negative),
// denormals, infinities, the smallest normals.
const uint32_t special_values[] = {0x80000000u, 0x00000000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x00000001u,
                                   0x80000001u, 0x7F800000u, 0xFF800000u, 0x00800000u, 0x80800000u};
constexpr size_t special_count = sizeof(special_values) / sizeof(special_values[0]);

// The dataset's generators, plus two patterns of the lab's own: `pattern: alternating` makes
// element i positive for even i and negative for odd i; `pattern: specials` replaces about a
// quarter of the elements, at random places, with the special values above.
Floats make_input(const Case& c, uint64_t seed_shift = 0) {
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  Floats in = labkit::generate<float>(c.n, spec);
  const std::string pattern = c.has("pattern") ? c.params.at("pattern") : "";
  if (pattern == "alternating")
    for (size_t i = 0; i < in.size(); ++i) in[i] = i % 2 == 0 ? std::fabs(in[i]) : -std::fabs(in[i]);
  if (pattern == "specials")
    for (size_t i = 0; i < in.size(); ++i) {
      const uint64_t bits = labkit::splitmix64(spec.seed * 0x9E3779B97F4A7C15ull + i);
      if (bits % 4 == 0) in[i] = from_bits(special_values[(bits >> 8) % special_count]);
    }
  return in;
}

// expand_positive's packed values: arbitrary bits (NaNs with payloads, infinities,
// denormals, negatives) with a special value in about one slot of 16, drawn from the case's
// seed and the slot alone, so that the GPU draws the same ones for a timed call. Never d_in's
// values: copying d_in where positive fails.
__host__ __device__ inline uint32_t packed_word(uint64_t seed, size_t j, const uint32_t* specials) {
  const uint64_t bits = labkit::splitmix64((seed ^ 0x5EED0F0A7C4E11EDull) * 0xD1B54A32D192ED03ull + j);
  return bits % 16 == 0 ? specials[(bits >> 8) % special_count] : uint32_t(bits >> 32);
}

Bits make_packed(const Case& c, size_t count) {
  Bits packed(count);
  for (size_t j = 0; j < count; ++j) packed[j] = packed_word(c.input.seed, j, special_values);
  return packed;
}

// ---- expected outputs, for the contract's predicate and for likely wrong ones -----------

struct Predicate {
  const char* mistake;  // what using this predicate instead of x > 0 means
  std::function<bool(uint32_t)> keeps;
};

bool contract_positive(uint32_t bits) { return from_bits(bits) > 0.f; }

const std::vector<Predicate>& wrong_predicates() {
  static const std::vector<Predicate> list = {
      {"zeros were treated as positive (x >= 0 keeps +0.0 and -0.0; the contract keeps x > 0 only)",
       [](uint32_t b) { return from_bits(b) >= 0.f; }},
      {"NaN was treated as positive (!(x <= 0) keeps every NaN, since comparisons with NaN are false; use x > 0)",
       [](uint32_t b) { return !(from_bits(b) <= 0.f); }},
      {"-0.0 or NaN was classified by its sign bit (signbit / a test of bit 31 keeps +0.0 and NaNs with a clear "
       "sign bit; the contract keeps x > 0 only)",
       [](uint32_t b) { return (b >> 31) == 0; }},
      {"NaN was treated as positive (the bits read as an int32 > 0 keep NaNs with a clear sign bit; compare the "
       "float: x > 0.0f)",
       [](uint32_t b) { return int32_t(b) > 0; }},
      {"denormals were dropped (x > FLT_MIN, or flush-to-zero: a positive denormal is positive)",
       [](uint32_t b) { return from_bits(b) >= std::numeric_limits<float>::min(); }},
  };
  return list;
}

struct Selection {
  Bits kept;                   // the kept elements, in input order
  std::vector<size_t> source;  // kept[j] = in[source[j]]
};

template <class Keep>
Selection select(const Bits& in, Keep keeps) {
  Selection s;
  for (size_t i = 0; i < in.size(); ++i)
    if (keeps(in[i])) {
      s.kept.push_back(in[i]);
      s.source.push_back(i);
    }
  return s;
}

// The kept elements alone, in input order: what a correct compaction writes.
template <class Keep>
Bits kept_by(const Bits& in, Keep keeps) {
  Bits kept;
  kept.reserve(in.size());
  for (uint32_t b : in)
    if (keeps(b)) kept.push_back(b);
  return kept;
}

// The kept elements, then the others, each in input order: what a correct split writes.
template <class Keep>
Bits split_by(const Bits& in, Keep keeps) {
  Bits out = kept_by(in, keeps);
  for (uint32_t b : in)
    if (!keeps(b)) out.push_back(b);
  return out;
}

size_t first_mismatch(const Bits& expected, const Bits& actual) {
  const size_t common = std::min(expected.size(), actual.size());
  return size_t(std::mismatch(expected.begin(), expected.begin() + common, actual.begin()).first - expected.begin());
}

bool same_multiset(Bits a, Bits b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

size_t count_poison(const Bits& v, size_t from = 0) {
  return size_t(std::count(v.begin() + std::min(from, v.size()), v.end(), poison_word));
}

bool all_poison_from(const Bits& v, size_t from) { return count_poison(v, from) == v.size() - std::min(from, v.size()); }


// ---- calling the student ----------------------------------------------------------------

Bits download_bits(const DeviceBuffer<float>& buffer) {
  return labkit::download(reinterpret_cast<const uint32_t*>(buffer.data()), buffer.size());
}

// Whether a const argument came back bit for bit as it was handed over (a NaN's payload too).
bool unchanged(const DeviceBuffer<float>& buffer, const Floats& sent) {
  const Floats back = buffer.download();
  return sent.empty() || std::memcmp(back.data(), sent.data(), sent.size() * sizeof(float)) == 0;
}

struct CompactOutput {
  Bits out;  // d_out[0..n + guard_words)
  size_t count = 0;
  bool input_changed = false;
};

CompactOutput run_student_compact(const Floats& input) {
  DeviceBuffer<float> d_in(input);
  DeviceBuffer<float> d_out(input.size() + guard_words);
  DeviceBuffer<size_t> d_count(1);
  d_out.poison();
  d_count.poison();
  labkit::student<decltype(compact_positive)>("compact_positive")(d_in.data(), input.size(), d_out.data(),
                                                                  d_count.data(), nullptr);
  CUDA_CHECK_KERNELS(nullptr);
  return {download_bits(d_out), d_count.download()[0], !unchanged(d_in, input)};
}

struct SplitOutput {
  Bits out;  // d_out[0..n + guard_words)
  bool input_changed = false;
};

SplitOutput run_student_split(const Floats& input) {
  DeviceBuffer<float> d_in(input);
  DeviceBuffer<float> d_out(input.size() + guard_words);
  d_out.poison();
  labkit::student<decltype(split_positive)>("split_positive")(d_in.data(), input.size(), d_out.data(), nullptr);
  CUDA_CHECK_KERNELS(nullptr);
  return {download_bits(d_out), !unchanged(d_in, input)};
}

// ---- naming the mistake -----------------------------------------------------------------

// The most aligned multiple of 64 in (previous, source], or 0 if there is none: the block
// boundary that the input crossed between two neighbouring outputs.
size_t chunk_boundary(size_t previous, size_t source) {
  for (size_t chunk = size_t(1) << 40; chunk >= 64; chunk >>= 1) {
    const size_t boundary = source / chunk * chunk;
    if (boundary > previous && boundary > 0) return boundary;
  }
  return 0;
}

constexpr size_t no_previous = ~size_t(0);

// Hints that both functions share, from where the first wrong output is and where the
// elements that belong there and just before it come from in the input (`previous` is
// no_previous when there is no such neighbour). "" when none fits.
std::string diagnose_placement(const Bits& expected, const Bits& actual, size_t wrong, size_t source,
                               size_t previous) {
  // An address past 2^24 can round down by one (16777217 -> 16777216, minus one for the
  // inclusive scan), so the first casualty can be d_out[2^24 - 1].
  if (wrong + 1 >= float_exact_limit)
    return "d_out[0.." + std::to_string(wrong - 1) + "] are right and d_out[" + std::to_string(wrong) +
           "] is the first wrong one, at the 2^24 boundary or past it: " + float_address_hint;
  if (previous == no_previous) return "";
  const size_t boundary = chunk_boundary(previous, source);
  if (boundary == 0) return "";
  const bool rest_unwritten = all_poison_from(actual, wrong);
  // Compaction leaves everything after the first block's kept elements unwritten; a split
  // also places the first block's others, so there nothing is written from d_out[2048] on.
  if (boundary == chapter_block && (rest_unwritten || all_poison_from(actual, chapter_block)))
    return "only the first 2048 elements were compacted: the scan covers one block (the chapter's single block of "
           "2 x BLOCK_DIM elements; scan each block, scan the block sums, add them back, or see the README's "
           "one-pass version)";
  const size_t chunk = boundary & (~boundary + 1);  // the largest power of two dividing it
  return "the outputs are right up to the first element taken from in[" + std::to_string(boundary) + "] or later, " +
         "and in[" + std::to_string(boundary) + "] starts an aligned chunk of " + std::to_string(chunk) +
         " input elements: " +
         (rest_unwritten ? std::string("nothing was written from there on")
                         : std::string("the number of kept elements before that chunk was not added to its "
                                       "addresses (a missing block offset or look-back)")) +
         ". d_out[" + std::to_string(wrong) + "] is " + show_bits(actual[wrong]) + ", expected " +
         show_bits(expected[wrong]) + " (from in[" + std::to_string(source) + "])";
}

// Calls the function again on the same input: a race shows as a different output.
std::string race_or_generic(const Bits& expected, const Bits& actual, const Bits& again, size_t wrong,
                            size_t source) {
  const std::string where = "d_out[" + std::to_string(wrong) + "] is " + show_bits(actual[wrong]) + ", expected " +
                            show_bits(expected[wrong]) + " (from in[" + std::to_string(source) + "])";
  if (again != actual)
    return "two runs on the same input gave different outputs (the first wrong element moved from " +
           std::to_string(wrong) + " to " + std::to_string(first_mismatch(expected, again)) + "): a race. Look for "
           "a missing __syncthreads() between writing and reading shared memory, or a look-back that reads a "
           "predecessor's flag before its count is visible (flag and count in one 64-bit word, or a "
           "__threadfence() between writing the count and the flag and another between reading the flag and the "
           "count). " + where;
  const size_t holes = count_poison(actual);
  if (holes > 0)
    return std::to_string(holes) + " output slots were never written (still 0xA5A5A5A5): some addresses were "
           "computed wrong, so elements collided or went elsewhere. " + where;
  return (wrong == 0 ? std::string("the very first output is wrong") : "d_out[0.." + std::to_string(wrong - 1) + "] are right") +
         ", and the output is the same on every run. " + where;
}

std::string diagnose_compact_count(const Bits& in, size_t expected_count, size_t count) {
  const std::string numbers = "*d_count is " + std::to_string(count) + ", expected " + std::to_string(expected_count);
  if (count == poison_count) return "*d_count was never written (it still holds 0xA5A5A5A5A5A5A5A5)";
  for (const Predicate& p : wrong_predicates())
    if (size_t(std::count_if(in.begin(), in.end(), p.keeps)) == count) return std::string(p.mistake) + ": " + numbers;
  const size_t difference = count > expected_count ? count - expected_count : expected_count - count;
  if (expected_count > float_exact_limit && difference <= expected_count / (float_exact_limit / 2))
    return numbers + ", off by " + std::to_string(difference) + " for a count past 2^24: " + float_address_hint;
  if (in.size() > chapter_block &&
      count == size_t(std::count_if(in.begin(), in.begin() + chapter_block, contract_positive)))
    return numbers + ", the number of positives among the first 2048 elements only: the scan covers one block";
  if (count == in.size()) return numbers + ", which is n: the count must be of the kept elements only";
  return numbers + " (it is the number of elements with x > 0.0f, which is also the last value of the "
                   "inclusive scan of the flags)";
}

std::string diagnose_compact_output(const Bits& in, const Selection& expected, const Bits& actual, const Bits& again) {
  if (count_poison(actual) == actual.size())
    return "d_out was not written at all: every element of d_out[0..count) still holds the 0xA5A5A5A5 the checks "
           "filled it with";
  if (same_multiset(expected.kept, actual))
    return "the right elements, but not in input order: compaction must be stable (atomicAdd on one counter "
           "hands out slots in whatever order threads arrive; use a scan of the flags, or warp ballots plus a "
           "look-back, which keep the order)";
  for (const Predicate& p : wrong_predicates()) {
    const Bits kept = select(in, p.keeps).kept;
    if (kept.size() >= actual.size() && std::equal(actual.begin(), actual.end(), kept.begin()) && kept != expected.kept)
      return std::string(p.mistake) + " (the count happens to match, the elements do not)";
  }
  const size_t wrong = first_mismatch(expected.kept, actual);
  const size_t source = expected.source[wrong];
  const size_t previous = wrong > 0 ? expected.source[wrong - 1] : no_previous;
  const std::string placement = diagnose_placement(expected.kept, actual, wrong, source, previous);
  if (!placement.empty()) return placement;
  return race_or_generic(expected.kept, actual, again, wrong, source);
}

void check_compact(const Case& c, const Floats& input) {
  const Bits in = to_bits(input);
  const Bits expected = kept_by(in, contract_positive);
  export_bits(c, "expected_output", expected);
  labkit::export_array(c, "expected_count", std::vector<uint64_t>{expected.size()});

  const CompactOutput result = run_student_compact(input);
  if (result.input_changed)
    return labkit::verdict(c, false, "compact_positive modified its input: d_in is const and must come back unchanged");
  if (result.count != expected.size())
    return labkit::verdict(c, false, diagnose_compact_count(in, expected.size(), result.count));

  const size_t count = expected.size();
  const Bits actual(result.out.begin(), result.out.begin() + count);
  if (actual != expected) {
    Bits again = run_student_compact(input).out;
    again.resize(count);
    const labkit::Comparison comparison = labkit::compare_exact(expected, actual);
    return labkit::verdict(c, false, diagnose_compact_output(in, select(in, contract_positive), actual, again) + ". " +
                                         comparison.describe());
  }
  const auto written = std::find_if(result.out.begin() + count, result.out.end(), [](uint32_t v) { return v != poison_word; });
  if (written != result.out.end())
    return labkit::verdict(c, false, "compact_positive wrote d_out[" + std::to_string(written - result.out.begin()) +
                                         "], at or past d_out + count (count = " + std::to_string(count) + ", n = " +
                                         std::to_string(c.n) + "): nothing after the kept elements may be written " +
                                         "(no padding, no copies of the rejected ones, no full vectors past the end)");
  labkit::verdict(c, true);
}

std::string diagnose_split(const Bits& in, const Bits& expected, const Bits& actual, const Bits& again) {
  const size_t n = in.size();
  if (count_poison(actual) == n)
    return "d_out was not written at all: every element still holds the 0xA5A5A5A5 the checks filled it with";
  const Selection positives = select(in, contract_positive);
  const size_t kept = positives.kept.size();
  for (const Predicate& p : wrong_predicates())
    if (split_by(in, p.keeps) == actual) return p.mistake;
  if (same_multiset(expected, actual)) {
    const bool positives_right = std::equal(expected.begin(), expected.begin() + kept, actual.begin());
    if (positives_right && std::equal(expected.begin() + kept, expected.end(), actual.rbegin()))
      return "the non-positive elements are in reverse order (written from the end of d_out backwards, as "
             "cub::DevicePartition::If does): the contract asks for a stable split, the others in input order too, "
             "starting at d_out[count of positives]";
    return std::string("the right elements, but not in input order") +
           (positives_right ? " among the non-positive ones" : "") +
           ": the split must be stable (atomicAdd on a counter hands out slots in whatever order threads arrive; "
           "use scans of the flags)";
  }
  const size_t wrong = first_mismatch(expected, actual);
  // The element that belongs at `wrong`: the wrong-th positive, or the (wrong - kept)-th other.
  // Neighbours in the same part only: the first of the others has no previous one.
  size_t source = 0, previous = no_previous;
  if (wrong < kept) {
    source = positives.source[wrong];
    if (wrong > 0) previous = positives.source[wrong - 1];
  } else {
    for (size_t i = 0, others = 0; i < n; ++i) {
      if (contract_positive(in[i])) continue;
      if (others == wrong - kept) {
        source = i;
        break;
      }
      previous = i;
      ++others;
    }
  }
  const std::string placement = diagnose_placement(expected, actual, wrong, source, previous);
  if (!placement.empty()) return placement;
  if (wrong == kept && kept > 0)
    return "the positive elements are right (d_out[0.." + std::to_string(kept - 1) + "]) but the others are not: they "
           "start at d_out[count of positives] = d_out[" + std::to_string(kept) + "], and element i of them goes to " +
           "count + (i - positives before i). " + race_or_generic(expected, actual, again, wrong, source);
  return race_or_generic(expected, actual, again, wrong, source);
}

void check_split(const Case& c, const Floats& input) {
  const Bits in = to_bits(input);
  const Bits expected = split_by(in, contract_positive);
  export_bits(c, "expected_output", expected);

  const SplitOutput result = run_student_split(input);
  if (result.input_changed)
    return labkit::verdict(c, false, "split_positive modified its input: d_in is const and must come back unchanged");
  const auto written = std::find_if(result.out.begin() + c.n, result.out.end(), [](uint32_t v) { return v != poison_word; });
  if (written != result.out.end()) {
    // A float address just below n > 2^24 can round up to n itself.
    const std::string cause = c.n + 1 >= float_exact_limit ? std::string(": ") + float_address_hint : "";
    return labkit::verdict(c, false, "split_positive wrote d_out[" + std::to_string(written - result.out.begin()) +
                                         "], past the end d_out + n (n = " + std::to_string(c.n) + ")" + cause);
  }
  const Bits actual(result.out.begin(), result.out.begin() + c.n);
  if (actual == expected) return labkit::verdict(c, true);
  Bits again = run_student_split(input).out;
  again.resize(c.n);
  const labkit::Comparison comparison = labkit::compare_exact(expected, actual);
  labkit::verdict(c, false, diagnose_split(in, expected, actual, again) + ". " + comparison.describe());
}

// ---- expand_positive ----------------------------------------------------------------------

struct ExpandOutput {
  Bits out;  // d_out[0..n + guard_words)
  bool input_changed = false;
  bool packed_changed = false;
};

// d_packed holds exactly `count` values: under compute-sanitizer a read past them is an
// out-of-bounds access.
ExpandOutput run_student_expand(const Floats& input, const Bits& packed) {
  const Floats packed_values = to_floats(packed);
  DeviceBuffer<float> d_in(input);
  DeviceBuffer<float> d_packed(packed_values);
  DeviceBuffer<float> d_out(input.size() + guard_words);
  d_out.poison();
  labkit::student<decltype(expand_positive)>("expand_positive")(d_in.data(), d_packed.data(), input.size(),
                                                                d_out.data(), nullptr);
  CUDA_CHECK_KERNELS(nullptr);
  return {download_bits(d_out), !unchanged(d_in, input), !unchanged(d_packed, packed_values)};
}

// out[i] = packed[rank of i] where kept, +0.0f elsewhere.
Bits expand_by(const Bits& in, const Bits& packed) {
  Bits out(in.size(), 0u);
  for (size_t i = 0, rank = 0; i < in.size(); ++i)
    if (contract_positive(in[i])) out[i] = packed[rank++];
  return out;
}

constexpr uint32_t negative_zero = 0x80000000u;

// The hint for a kept element i whose value is wrong: which packed value it took, if any.
// `ranks[i]` is the number of kept elements before i.
std::string diagnose_expand_kept(const Bits& in, const Bits& packed, const Bits& actual,
                                 const std::vector<size_t>& ranks, size_t i) {
  const size_t r = ranks[i];
  const std::string where = "d_out[" + std::to_string(i) + "] (in[" + std::to_string(i) + "] = " +
                            show_bits(in[i]) + ", positive, the kept element of rank " + std::to_string(r) +
                            ") is " + show_bits(actual[i]) + ", expected d_packed[" + std::to_string(r) + "] = " +
                            show_bits(packed[r]);
  if (r + 1 >= float_exact_limit)
    return "d_out is right up to d_out[" + std::to_string(i) + "], the first kept element whose rank reaches 2^24: " +
           float_address_hint + ". " + where;
  if (actual[i] == in[i])
    return "the kept elements were copied from d_in: d_out[i] must be d_packed[r], the value the compaction's "
           "address r (the number of positives before i) points to in the packed array, not d_in[i]. " + where;
  if (r + 1 < packed.size() && actual[i] == packed[r + 1])
    return "each kept element took the packed value one place too far: its address is the inclusive scan (the "
           "positives up to and including i) where it must be the exclusive one, the positives before i (scan[i] - 1 "
           "with an inclusive scan). " + where;
  if (r > 0 && actual[i] == packed[r - 1])
    return "each kept element took the packed value one place too early: its address is one less than the number "
           "of positives before i. " + where;
  for (const Predicate& p : wrong_predicates())
    if (!p.keeps(in[i]) && actual[i] == 0u) return std::string(p.mistake) + ". " + where;
  const bool nothing_from_block = std::all_of(actual.begin() + std::min(actual.size(), chapter_block), actual.end(),
                                              [](uint32_t v) { return v == 0u || v == poison_word; });
  if (i >= chapter_block && nothing_from_block)
    return "only the first 2048 elements got their packed values back, every later one is zero or unwritten: the "
           "scan covers one block (the chapter's single block of 2 x BLOCK_DIM elements; scan each block, scan the "
           "block sums, add them back, or see the README's one-pass version). " + where;
  const auto found = std::find(packed.begin(), packed.end(), actual[i]);
  if (found != packed.end() && size_t(found - packed.begin()) < r) {
    const size_t missing = r - size_t(found - packed.begin());
    for (size_t chunk = size_t(1) << 30; chunk >= 64; chunk >>= 1) {
      const size_t boundary = i / chunk * chunk;
      if (boundary > 0 && ranks[boundary] == missing)
        return "d_out is right up to in[" + std::to_string(boundary) + "], which starts an aligned chunk of " +
               std::to_string(chunk) + " elements, and from there the kept elements start again at "
               "d_packed[0]: the number of positives before that chunk (" + std::to_string(missing) + ") was not " +
               "added to its addresses (a missing block offset or look-back). " + where;
    }
  }
  if (actual[i] == poison_word)
    return "kept elements were never written (still 0xA5A5A5A5): d_out is not cleared for you, and every element "
           "of it must be written. " + where;
  return where;
}

// The hint for a non-positive element i whose output is not +0.0f.
std::string diagnose_expand_other(const Bits& in, const Bits& actual, size_t i) {
  const std::string where = "d_out[" + std::to_string(i) + "] (in[" + std::to_string(i) + "] = " +
                            show_bits(in[i]) + ", not positive) is " + show_bits(actual[i]) + ", expected +0.0f";
  if (actual[i] == poison_word)
    return "the places of the non-positive elements kept the old contents of d_out (still 0xA5A5A5A5): d_out is "
           "not cleared for you, so write +0.0f there (the chapter clears d_out first; a one-pass kernel writes "
           "every element anyway). " + where;
  if (actual[i] == negative_zero)
    return "the non-positive elements came out as -0.0f: the contract asks for +0.0f (bits 0x00000000); -0.0f "
           "compares equal to 0 but its sign bit is set (a product such as in[i] * 0.0f, or copysign, keeps the "
           "sign of a negative in[i]). " + where;
  if (actual[i] == in[i])
    return "the non-positive elements were copied from d_in: they must be +0.0f. " + where;
  for (const Predicate& p : wrong_predicates())
    if (p.keeps(in[i])) return std::string(p.mistake) + ". " + where;
  return where;
}

std::string diagnose_expand(const Bits& in, const Bits& packed, const Bits& expected, const Bits& actual,
                            const Bits& again) {
  if (!actual.empty() && count_poison(actual) == actual.size())
    return "d_out was not written at all: every element still holds the 0xA5A5A5A5 the checks filled it with";
  const size_t wrong = first_mismatch(expected, actual);
  if (again != actual)
    return "two runs on the same input gave different outputs (the first wrong element moved from " +
           std::to_string(wrong) + " to " + std::to_string(first_mismatch(expected, again)) + "): a race. Look for "
           "a missing __syncthreads() between writing and reading shared memory, or a look-back that reads a "
           "predecessor's flag before its count is visible";
  if (!contract_positive(in[wrong])) return diagnose_expand_other(in, actual, wrong);
  std::vector<size_t> ranks(in.size() + 1);
  for (size_t i = 0; i < in.size(); ++i) ranks[i + 1] = ranks[i] + (contract_positive(in[i]) ? 1 : 0);
  return diagnose_expand_kept(in, packed, actual, ranks, wrong);
}

void check_expand(const Case& c, const Floats& input) {
  const Bits in = to_bits(input);
  const size_t count = size_t(std::count_if(in.begin(), in.end(), contract_positive));
  const Bits packed = make_packed(c, count);
  const Bits expected = expand_by(in, packed);
  export_bits(c, "packed", packed);
  export_bits(c, "expected_output", expected);

  const ExpandOutput result = run_student_expand(input, packed);
  if (result.input_changed)
    return labkit::verdict(c, false, "expand_positive modified its input: d_in is const and must come back unchanged");
  if (result.packed_changed)
    return labkit::verdict(c, false,
                           "expand_positive modified d_packed: it is const and must come back unchanged");
  const auto written = std::find_if(result.out.begin() + c.n, result.out.end(), [](uint32_t v) { return v != poison_word; });
  if (written != result.out.end())
    return labkit::verdict(c, false, "expand_positive wrote d_out[" + std::to_string(written - result.out.begin()) +
                                         "], past the end d_out + n (n = " + std::to_string(c.n) +
                                         "): no padding, no full vectors past the end");
  const Bits actual(result.out.begin(), result.out.begin() + c.n);
  if (actual == expected) return labkit::verdict(c, true);
  Bits again = run_student_expand(input, packed).out;
  again.resize(c.n);
  const labkit::Comparison comparison = labkit::compare_exact(expected, actual);
  labkit::verdict(c, false, diagnose_expand(in, packed, expected, actual, again) + ". " + comparison.describe());
}

void check_case(const Case& c) {
  const Floats input = make_input(c);
  labkit::export_array(c, "input", input);
  if (is_split_case(c))
    check_split(c, input);
  else if (is_expand_case(c))
    check_expand(c, input);
  else
    check_compact(c, input);
}

// ---- performance ------------------------------------------------------------------------

// make_input's patterns on the GPU. The special values travel with the launch.
enum class Pattern { none, alternating, specials };
struct SpecialValues {
  uint32_t bits[special_count];
};

__global__ void apply_pattern_kernel(float* values, size_t n, Pattern pattern, uint64_t seed,
                                     const SpecialValues specials) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    if (pattern == Pattern::alternating) values[i] = i % 2 == 0 ? fabsf(values[i]) : -fabsf(values[i]);
    if (pattern == Pattern::specials) {
      const uint64_t bits = labkit::splitmix64(seed * 0x9E3779B97F4A7C15ull + i);
      if (bits % 4 == 0) values[i] = __uint_as_float(specials.bits[(bits >> 8) % special_count]);
    }
  }
}

// make_input(c) with `seed` for the case's, drawn on the GPU: the same data for the same seed.
void draw_input(const Case& c, float* out, uint64_t seed, cudaStream_t stream) {
  labkit::InputSpec spec = c.input;
  spec.seed = seed;
  labkit::generate_on_device(out, c.n, spec, stream);
  const std::string name = c.has("pattern") ? c.params.at("pattern") : "";
  const Pattern pattern = name == "alternating" ? Pattern::alternating
                          : name == "specials"  ? Pattern::specials
                                                : Pattern::none;
  if (c.n == 0 || pattern == Pattern::none) return;
  SpecialValues specials;
  std::copy(std::begin(special_values), std::end(special_values), specials.bits);
  apply_pattern_kernel<<<unsigned(std::min<size_t>((c.n + 255) / 256, 4096)), 256, 0, stream>>>(out, c.n, pattern,
                                                                                                 seed, specials);
  CUDA_CHECK(cudaGetLastError());
}

// A timed call's buffers: an input of the case's shape drawn afresh for every call
// (labkit/fresh_input.h), what the call writes (the count only for compact_positive), and
// the reference's output for the same input.
struct PerfBuffers {
  explicit PerfBuffers(const Case& c)
      : input(c.n, [&c](float* out, uint64_t seed, cudaStream_t stream) { draw_input(c, out, seed, stream); }),
        out(c.n), count(1), expected(c.n), expected_count(1), cub_select(c.n), cub_split(c.n) {}
  labkit::FreshInput<float> input;
  labkit::TimedOutput<float> out;
  labkit::TimedOutput<size_t> count;
  DeviceBuffer<float> expected;
  DeviceBuffer<size_t> expected_count;
  cub_compact::Select cub_select;
  cub_compact::StableSplit cub_split;
};

// The first `count` floats of two device arrays, compared bit for bit.
labkit::Comparison compare_bits_on_device(const float* expected, const float* actual, size_t count) {
  return labkit::compare_exact_on_device(reinterpret_cast<const uint32_t*>(expected),
                                         reinterpret_cast<const uint32_t*>(actual), count);
}

labkit::PerfSubject compact_subject(labkit::Function<decltype(compact_positive)> fn, const Case& c, PerfBuffers& b) {
  return {labkit::timed_call([fn, &c, &b](cudaStream_t stream) {
                               fn(b.input.data(), c.n, b.out.data(), b.count.data(), stream);
                             },
                             {&b.input}, {&b.out, &b.count}),
          [&c, &b]() -> std::string {
            labkit::reference<decltype(compact_positive)>("compact_positive")(
                b.input.drawn(), c.n, b.expected.data(), b.expected_count.data(), nullptr);
            const size_t expected_count = b.expected_count.download()[0];
            const size_t got = b.count.collected()[0];
            if (got != expected_count)
              return "*d_count is " + std::to_string(got) + ", expected " + std::to_string(expected_count);
            return compare_bits_on_device(b.expected.data(), b.out.collected_data(), expected_count).describe();
          }};
}

labkit::PerfSubject split_subject(labkit::Function<decltype(split_positive)> fn, const Case& c, PerfBuffers& b) {
  return {labkit::timed_call([fn, &c, &b](cudaStream_t stream) { fn(b.input.data(), c.n, b.out.data(), stream); },
                             {&b.input}, {&b.out}),
          [&c, &b] {
            labkit::reference<decltype(split_positive)>("split_positive")(b.input.drawn(), c.n, b.expected.data(),
                                                                          nullptr);
            return compare_bits_on_device(b.expected.data(), b.out.collected_data(), c.n).describe();
          }};
}

// How many elements the case's own input (its public seed) keeps: the bytes a compaction
// writes, for the memory floor.
size_t kept_by_case_input(const Case& c, PerfBuffers& b) {
  DeviceBuffer<float> input(c.n);
  draw_input(c, input.data(), c.input.seed, nullptr);
  labkit::reference<decltype(compact_positive)>("compact_positive")(input.data(), c.n, b.expected.data(),
                                                                    b.expected_count.data(), nullptr);
  return b.expected_count.download()[0];
}

// ---- expand_positive's timed case ---------------------------------------------------------

__global__ void draw_packed_kernel(float* packed, size_t count, uint64_t seed, const SpecialValues specials) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < count; j += size_t(gridDim.x) * blockDim.x)
    packed[j] = __uint_as_float(packed_word(seed, j, specials.bits));
}

// make_packed(c, n) drawn on the GPU from `seed`: room for every element's value, of which a
// call reads the first count.
void draw_packed(float* out, size_t n, uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  SpecialValues specials;
  std::copy(std::begin(special_values), std::end(special_values), specials.bits);
  draw_packed_kernel<<<unsigned(std::min<size_t>((n + 255) / 256, 4096)), 256, 0, stream>>>(out, n, seed, specials);
  CUDA_CHECK(cudaGetLastError());
}

// A timed expansion's buffers: the input and the packed values drawn afresh for every call, the
// output, and the reference's output for the same input.
struct ExpandPerfBuffers {
  explicit ExpandPerfBuffers(const Case& c)
      : input(c.n, [&c](float* out, uint64_t seed, cudaStream_t stream) { draw_input(c, out, seed, stream); }),
        packed(c.n, [&c](float* out, uint64_t seed, cudaStream_t stream) { draw_packed(out, c.n, seed, stream); }),
        out(c.n), expected(c.n) {}
  labkit::FreshInput<float> input;
  labkit::FreshInput<float> packed;
  labkit::TimedOutput<float> out;
  DeviceBuffer<float> expected;
};

labkit::PerfSubject expand_subject(labkit::Function<decltype(expand_positive)> fn, const Case& c,
                                   ExpandPerfBuffers& b) {
  return {labkit::timed_call([fn, &c, &b](cudaStream_t stream) {
                               fn(b.input.data(), b.packed.data(), c.n, b.out.data(), stream);
                             },
                             {&b.input, &b.packed}, {&b.out}),
          [&c, &b] {
            labkit::reference<decltype(expand_positive)>("expand_positive")(b.input.drawn(), b.packed.drawn(), c.n,
                                                                            b.expected.data(), nullptr);
            return compare_bits_on_device(b.expected.data(), b.out.collected_data(), c.n).describe();
          }};
}

// The yardstick the reports show beside the reference (no library expands): a device-to-device
// copy of the input into the output, 8n of the 8n + 4·count bytes an expansion must move.
labkit::LibraryAnchor input_copy(const Case& c, ExpandPerfBuffers& b) {
  const auto copy = [&c, &b](cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(b.out.data(), b.input.data(), c.n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  };
  return {"cudaMemcpy of d_in (device to device)", {labkit::timed_call(copy, {&b.input}, {&b.out}), {}}};
}

void measure_expand_case(const Case& c) {
  ExpandPerfBuffers buffers(c);
  // Read n and the packed values of what the case's own input keeps, write n.
  size_t kept = 0;
  {
    DeviceBuffer<float> input(c.n), compacted(c.n);
    DeviceBuffer<size_t> count(1);
    draw_input(c, input.data(), c.input.seed, nullptr);
    labkit::reference<decltype(compact_positive)>("compact_positive")(input.data(), c.n, compacted.data(),
                                                                      count.data(), nullptr);
    kept = count.download()[0];
  }
  const double bytes_moved = sizeof(float) * (2.0 * double(c.n) + double(kept));
  labkit::measure_performance(
      c, bytes_moved, expand_subject(labkit::student<decltype(expand_positive)>("expand_positive"), c, buffers),
      expand_subject(labkit::reference<decltype(expand_positive)>("expand_positive"), c, buffers),
      input_copy(c, buffers));
}

void measure_case(const Case& c) {
  if (is_expand_case(c)) return measure_expand_case(c);
  PerfBuffers buffers(c);
  if (is_split_case(c)) {
    const double bytes_moved = 2.0 * sizeof(float) * double(c.n);  // read n, write n
    labkit::measure_performance(
        c, bytes_moved, split_subject(labkit::student<decltype(split_positive)>("split_positive"), c, buffers),
        split_subject(labkit::reference<decltype(split_positive)>("split_positive"), c, buffers),
        {"cub::DevicePartition::If (+ tail reversed)", split_subject(std::ref(buffers.cub_split), c, buffers)});
    return;
  }
  // Read n, write what the case's own input keeps.
  const double bytes_moved = sizeof(float) * (double(c.n) + double(kept_by_case_input(c, buffers)));
  labkit::measure_performance(
      c, bytes_moved, compact_subject(labkit::student<decltype(compact_positive)>("compact_positive"), c, buffers),
      compact_subject(labkit::reference<decltype(compact_positive)>("compact_positive"), c, buffers),
      {"cub::DeviceSelect::If", compact_subject(std::ref(buffers.cub_select), c, buffers)});
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("compact_positive, split_positive and expand_positive match CPU versions") {
    labkit::for_each_correctness_case([](const Case& c) { check_case(c); });
  }
}

TEST_SUITE("performance") {
  TEST_CASE("compact_positive, split_positive and expand_positive throughput against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      measure_case(c);
    });
  }
}
