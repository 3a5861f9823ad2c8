// Lab 02 checks: the student's dot product against an exact CPU sum, each case run several
// times (a race shows up as answers that change between runs); the arg-max exercise against
// std::max_element; then the dot product's speed against the reference solution's. Part 2,
// argmax_float (the cases with `exercise: argmax_float`): against std::max_element on every
// run, then its speed against the reference's, cub::DeviceReduce::ArgMax beside them.
#include "cub_dot.cuh"
#include "dot.h"

#include <labkit/lab.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
constexpr uint64_t poison_u64 = 0x0101010101010101ull * labkit::poison_byte;

// ---- inputs -----------------------------------------------------------------------------

// b is drawn like a, from another seed. A case may start a or b a few elements past an
// aligned address (offset_a, offset_b), to test that wide loads cope with any pointer the
// contract allows.
struct DotInputs {
  std::vector<int32_t> a, b;  // with the offsets' leading elements included
  size_t offset_a = 0, offset_b = 0;
};

DotInputs make_dot_inputs(const Case& c, uint64_t seed_shift = 0) {
  DotInputs in;
  in.offset_a = size_t(c.integer("offset_a", 0));
  in.offset_b = size_t(c.integer("offset_b", 0));
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  in.a = labkit::generate<int32_t>(c.n + in.offset_a, spec);
  spec.seed = labkit::splitmix64(spec.seed ^ 0xB0B0B0B0ull);
  in.b = labkit::generate<int32_t>(c.n + in.offset_b, spec);
  return in;
}

// Wrapping 64-bit arithmetic, exactly as the contract states the result.
uint64_t cpu_dot(const DotInputs& in, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += uint64_t(int64_t(in.a[in.offset_a + i]) * in.b[in.offset_b + i]);
  return sum;
}

// What common slips would have produced, to name them when the answer matches one.
struct NarrowAnswers {
  uint64_t products_in_32_bits = 0;  // int32 * int32 wrapped to 32 bits, then widened
  uint64_t sum_in_32_bits = 0;       // right products, sum kept in an int32
};

NarrowAnswers narrow_answers(const DotInputs& in, size_t n) {
  NarrowAnswers r;
  uint32_t sum32 = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t p = int64_t(in.a[in.offset_a + i]) * in.b[in.offset_b + i];
    r.products_in_32_bits += uint64_t(int64_t(int32_t(uint32_t(p))));
    sum32 += uint32_t(p);
  }
  r.sum_in_32_bits = uint64_t(int64_t(int32_t(sum32)));
  return r;
}

// ---- shared-memory junk ---------------------------------------------------------------
// Shared memory is not cleared between kernels, but what a kernel finds there depends on
// what ran before it. The submission's process fills every SM's shared memory with poison
// bytes before each call, so a read of a slot no thread wrote gives the same wrong answer
// every time, instead of passing by luck where the slot happened to hold a zero.
void fill_shared_memory_with_poison() { labkit::poison_student_shared_memory(0x01010101u * labkit::poison_byte); }

// ---- dot: correctness ------------------------------------------------------------------

std::string show(uint64_t value) { return std::to_string(int64_t(value)); }

constexpr size_t padding_multiple = 1024;  // a multiple of any block size a student picks

// Runs the student's dot `repeats` times on `in`, each time after poisoning the output and
// shared memory, and returns what each run wrote.
std::vector<uint64_t> run_dot(const Case& c, const DotInputs& in, size_t n) {
  DeviceBuffer<int32_t> d_a(in.a), d_b(in.b);
  DeviceBuffer<int64_t> d_result(1);
  auto dot_fn = labkit::student<decltype(dot)>("dot");
  std::vector<uint64_t> results;
  for (long long run = 0; run < c.integer("repeats", 5); ++run) {
    fill_shared_memory_with_poison();
    d_result.poison();
    dot_fn(d_a.data() + in.offset_a, d_b.data() + in.offset_b, n, d_result.data(), nullptr);
    CUDA_CHECK_KERNELS(nullptr);
    results.push_back(uint64_t(d_result.download()[0]));
  }
  return results;
}

// The same sum over n rounded up to a multiple of 1024, the extra elements zero.
DotInputs padded_with_zeros(const DotInputs& in, size_t padded_n) {
  DotInputs padded = in;
  padded.a.resize(in.offset_a + padded_n, 0);
  padded.b.resize(in.offset_b + padded_n, 0);
  return padded;
}

// True when `wrong` is the sum of one aligned chunk of `block` products alone: what is left
// when every block reads the same starting value and the last block's write wins.
bool is_one_chunk_sum(const DotInputs& in, size_t n, uint64_t wrong) {
  for (size_t block = 32; block <= 1024; block *= 2)
    for (size_t start = 0; start < n; start += block) {
      uint64_t chunk = 0;
      for (size_t i = start; i < std::min(n, start + block); ++i)
        chunk += uint64_t(int64_t(in.a[in.offset_a + i]) * in.b[in.offset_b + i]);
      if (chunk == wrong) return true;
    }
  return false;
}

const char* race_hint =
    "a race: blocks overwrite each other's sums (hint: `*d_result += x` by many blocks at once is a read, an "
    "add and a write, and another block can write in between; see the README's table of atomic functions)";

// Names the likely mistake for runs over n elements, n a multiple of 1024.
std::string diagnose_whole_blocks(const DotInputs& in, size_t n, uint64_t expected,
                                  const std::vector<uint64_t>& results) {
  const std::set<uint64_t> distinct(results.begin(), results.end());
  const uint64_t wrong = *std::find_if(results.begin(), results.end(), [&](uint64_t r) { return r != expected; });
  if (distinct.size() > 1)
    return "the " + std::to_string(results.size()) + " runs gave " + std::to_string(distinct.size()) +
           " different answers: " + race_hint;
  const NarrowAnswers narrow = narrow_answers(in, n);
  if (wrong == narrow.products_in_32_bits)
    return "that is the answer you get when each product is computed in 32 bits: a[i] * b[i] overflows int32 "
           "here (hint: widen before multiplying, not after)";
  if (wrong == narrow.sum_in_32_bits)
    return "that is the answer you get when the sum is kept in 32 bits: this sum needs 64 bits (hint: every "
           "partial sum, per thread, per block and across blocks, must be 64-bit)";
  if (n <= (size_t(1) << 26) && is_one_chunk_sum(in, n, wrong))
    return std::string("the same on every run, and equal to the sum of one block's elements alone: ") + race_hint +
           " (here every block read the same starting value, so the last write won)";
  return "the same on every run";
}

// Names the likely mistake from what the runs returned. A case whose n is not a multiple of
// 1024 runs again on its inputs padded with zeros to one: if that is right, the trouble is
// the threads past n; if not, the padded runs are diagnosed instead, free of that question.
std::string diagnose_dot(const Case& c, const DotInputs& in, uint64_t expected, const std::vector<uint64_t>& results) {
  const uint64_t wrong = *std::find_if(results.begin(), results.end(), [&](uint64_t r) { return r != expected; });
  const std::string message = "expected " + show(expected) + ", got " + show(wrong);
  if (std::count(results.begin(), results.end(), poison_u64) != 0)
    return message + ": *d_result still holds what it held before the call (the checks fill it with 0xA5 "
                     "bytes); dot must overwrite it, for every n including 0";
  if (c.n % padding_multiple == 0) return message + ": " + diagnose_whole_blocks(in, c.n, expected, results);

  const size_t padded_n = (c.n + padding_multiple - 1) / padding_multiple * padding_multiple;
  const DotInputs padded = padded_with_zeros(in, padded_n);
  const std::vector<uint64_t> padded_results = run_dot(c, padded, padded_n);
  const std::string padded_label = "the same inputs padded with zeros to n = " + std::to_string(padded_n);
  if (std::all_of(padded_results.begin(), padded_results.end(), [&](uint64_t r) { return r == expected; }))
    return message + "; " + padded_label + " give the right answer every time, so it goes wrong only when n (" +
           std::to_string(c.n) + ") is not a multiple of the block size: threads past n still take part (hint: "
           "a thread that returns early never fills its shared-memory slot, which holds junk, yet the block's "
           "sum reads it; and a __syncthreads() that some threads of the block never reach is undefined)";
  return message + "; on " + padded_label + ": " + diagnose_whole_blocks(padded, padded_n, expected, padded_results) +
         ". Fix that first, then check that threads past n take no part";
}

void check_dot(const Case& c) {
  const DotInputs in = make_dot_inputs(c);
  const uint64_t expected = cpu_dot(in, c.n);
  labkit::export_array(c, "a", std::vector<int32_t>(in.a.begin() + in.offset_a, in.a.end()));
  labkit::export_array(c, "b", std::vector<int32_t>(in.b.begin() + in.offset_b, in.b.end()));
  labkit::export_array(c, "expected_result", std::vector<int64_t>{int64_t(expected)});
  const std::vector<uint64_t> results = run_dot(c, in, c.n);
  const bool ok = std::all_of(results.begin(), results.end(), [&](uint64_t r) { return r == expected; });
  labkit::verdict(c, ok, ok ? "" : diagnose_dot(c, in, expected, results));
}

// ---- argmax: correctness ---------------------------------------------------------------

std::string diagnose_argmax(const std::vector<int32_t>& in, int64_t expected, int64_t actual) {
  const std::string message = "expected index " + std::to_string(expected) + ", got " + std::to_string(actual);
  if (uint64_t(actual) == poison_u64)
    return message + ": *d_index still holds what it held before the call (the checks fill it with 0xA5 bytes)";
  if (actual < 0 || size_t(actual) >= in.size())
    return message + ", which is not an index of the input (n = " + std::to_string(in.size()) + ")";
  if (in[actual] == in[expected])
    return message + ", which holds the largest value too, but the contract asks for the smallest such "
                     "index (hint: ties are a race as well: the last thread to write wins, unless the "
                     "comparison itself prefers the smaller index)";
  return message + ", which holds " + std::to_string(in[actual]) + ", not the largest value " +
         std::to_string(in[expected]) + ": value and index were updated by separate operations and another "
         "thread got in between (hint: one atomic operation must update both at once; which atomic "
         "functions work on 64-bit words?)";
}

// Both argmax functions: each run of the case must name the first index of the largest
// value; `diagnose` says what a wrong index suggests.
template <class T, class Argmax, class Diagnose>
void check_index_of_max(const Case& c, const std::vector<T>& in, Argmax argmax_fn, Diagnose diagnose) {
  const int64_t expected = std::max_element(in.begin(), in.end()) - in.begin();
  labkit::export_array(c, "input", in);
  labkit::export_array(c, "expected_index", std::vector<int64_t>{expected});
  DeviceBuffer<T> d_in(in);
  DeviceBuffer<int64_t> d_index(1);
  for (long long run = 0; run < c.integer("repeats", 5); ++run) {
    d_index.poison();
    argmax_fn(d_in.data(), c.n, d_index.data(), nullptr);
    CUDA_CHECK_KERNELS(nullptr);
    const int64_t actual = d_index.download()[0];
    if (actual != expected) {
      labkit::verdict(c, false, diagnose(in, expected, actual) + " (run " + std::to_string(run + 1) + ")");
      return;
    }
  }
  labkit::verdict(c, true);
}

void check_argmax(const Case& c) {
  if (c.n == 0) throw std::invalid_argument("argmax cases need n >= 1");
  check_index_of_max(c, labkit::generate<int32_t>(c.n, c.input), labkit::student<decltype(argmax)>("argmax"),
                     diagnose_argmax);
}

// ---- dot: performance ------------------------------------------------------------------

// A timed call's buffers: two vectors drawn afresh in the case's distribution for every call
// (labkit/fresh_input.h), the result it writes, and the reference's result for the same input.
struct PerfBuffers {
  explicit PerfBuffers(const Case& c) : a(c.n, c.input), b(c.n, c.input), result(1), expected(1), cub(c.n) {}
  labkit::FreshInput<int32_t> a, b;
  labkit::TimedOutput<int64_t> result;
  DeviceBuffer<int64_t> expected;
  CubDot cub;
};

labkit::PerfSubject perf_subject(labkit::Function<decltype(dot)> fn, const Case& c, PerfBuffers& in) {
  return {labkit::timed_call([fn, &c, &in](cudaStream_t stream) {
                               fn(in.a.data(), in.b.data(), c.n, in.result.data(), stream);
                             },
                             {&in.a, &in.b}, {&in.result}),
          [&c, &in]() -> std::string {
            labkit::reference<decltype(dot)>("dot")(in.a.drawn(), in.b.drawn(), c.n, in.expected.data(), nullptr);
            const uint64_t expected = uint64_t(in.expected.download()[0]);
            const uint64_t actual = uint64_t(in.result.collected()[0]);
            return actual == expected ? "" : "expected " + show(expected) + ", got " + show(actual);
          }};
}

bool is_argmax_case(const Case& c) { return c.has("exercise") && c.params.at("exercise") == "argmax"; }

// ---- Part 2, argmax_float: correctness -----------------------------------------------------

bool is_argmax_float_case(const Case& c) { return c.has("exercise") && c.params.at("exercise") == "argmax_float"; }
bool is_part1_case(const Case& c) { return !is_argmax_float_case(c); }

// A position in [lo, hi) drawn from the case's seed and a salt.
size_t planted_position(const Case& c, uint64_t salt, size_t lo, size_t hi) {
  return lo + size_t(labkit::splitmix64(c.input.seed ^ salt) % (hi - lo));
}

// The case's floats, drawn in [lo, hi], then what `plant` asks for:
//   max-first, max-last  a value above every other at index 0, or at n - 1
//   signed-zeros         (the range below zero) -0.0f at a drawn position in the first half, and
//                        +0.0f at four drawn positions after it: the largest value is zero, and
//                        its first index holds -0.0f
std::vector<float> make_float_input(const Case& c) {
  std::vector<float> in = labkit::generate<float>(c.n, c.input);
  const std::string plant = c.has("plant") ? c.params.at("plant") : "";
  const float above = float(c.input.hi + (c.input.hi - c.input.lo) + 1);
  if (plant == "max-first") {
    in.front() = above;
  } else if (plant == "max-last") {
    in.back() = above;
  } else if (plant == "signed-zeros") {
    if (c.input.hi >= 0 || c.n < 8) throw std::invalid_argument("signed-zeros needs values below zero and n >= 8");
    const size_t first = planted_position(c, 0x2E50, 0, c.n / 2);
    in[first] = -0.0f;
    for (uint64_t k = 0; k < 4; ++k) in[planted_position(c, 0x2E51 + k, first + 1, c.n)] = +0.0f;
  } else if (!plant.empty()) {
    throw std::invalid_argument("unknown plant: " + plant);
  }
  return in;
}

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// The index std::max_element would pick if the floats' bits were compared as signed (or as
// unsigned) integers: what a key without the order-preserving transform gives.
template <class Int>
size_t argmax_of_bits(const std::vector<float>& in) {
  size_t best = 0;
  for (size_t i = 1; i < in.size(); ++i)
    if (Int(float_bits(in[i])) > Int(float_bits(in[best]))) best = i;
  return best;
}

std::string show_float(float value) {
  if (value == 0) return std::signbit(value) ? "-0.0" : "+0.0";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::string diagnose_argmax_float(const std::vector<float>& in, int64_t expected, int64_t actual) {
  const std::string message = "expected index " + std::to_string(expected) + " (" + show_float(in[expected]) +
                              "), got " + std::to_string(actual);
  if (uint64_t(actual) == poison_u64)
    return message + ": *d_index still holds what it held before the call (the checks fill it with 0xA5 bytes)";
  if (actual < 0 || size_t(actual) >= in.size())
    return message + ", which is not an index of the input (n = " + std::to_string(in.size()) + ")";
  const std::string got = message + " (" + show_float(in[actual]) + ")";
  if (in[actual] == 0 && in[expected] == 0 && std::signbit(in[actual]) != std::signbit(in[expected]))
    return got + ": -0.0 and +0.0 compare equal, so the first of them wins, but your key orders -0.0 below "
                 "+0.0 (hint: their bits differ; fold -0.0 into +0.0 before making the key, e.g. add 0.0f)";
  if (in[actual] == in[expected])
    return got + ", which holds the largest value too, but the contract asks for the smallest such index (hint: "
                 "ties are a race as well: the last thread to write wins, unless the comparison itself prefers the "
                 "smaller index, e.g. the complement of the index in the packed word's low half)";
  if (size_t(actual) == argmax_of_bits<int32_t>(in))
    return got + ": that is the largest if the floats' bits are compared as signed integers, which orders "
                 "negative floats backwards (a larger magnitude has larger bits) (hint: README, part 2: flip all "
                 "the bits of a negative float, set the sign bit of a positive one, then compare unsigned)";
  if (size_t(actual) == argmax_of_bits<uint32_t>(in))
    return got + ": that is the largest if the floats' bits are compared as unsigned integers, which puts every "
                 "negative float above every positive one (hint: README, part 2: flip all the bits of a negative "
                 "float, set the sign bit of a positive one)";
  return got + ", not the largest value: value and index were updated by separate operations and another thread "
               "got in between, or a compare-and-swap loop retried from a stale value (hint: one atomic operation "
               "on one 64-bit word must update both; after a failed atomicCAS, start again from what it returned)";
}

void check_argmax_float(const Case& c) {
  if (c.n == 0) throw std::invalid_argument("argmax_float cases need n >= 1");
  check_index_of_max(c, make_float_input(c), labkit::student<decltype(argmax_float)>("argmax_float"),
                     diagnose_argmax_float);
}

// ---- Part 2, argmax_float: performance -----------------------------------------------------

// The float whose order-preserving key (README, part 2) is `key`.
__device__ float float_of_key(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

// Ascending values, every element above the one before it, so that every thread's candidate
// beats what the word held when it looked: the most contended input for a merge on one word.
// The largest value appears a second time at `tie`, in the last sixteenth, so the answer is
// `tie`, not n - 1, and cannot be guessed from the input's shape.
__global__ void ascending_kernel(float* out, size_t n, uint32_t first_key, size_t tie) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = float_of_key(first_key + uint32_t(i == tie ? n - 1 : i));
}

// `pattern: ascending`: consecutive finite floats from a key drawn from the seed; otherwise the
// case's distribution.
labkit::FreshInput<float> float_perf_input(const Case& c) {
  if (!c.has("pattern")) return labkit::FreshInput<float>(c.n, c.input);
  if (c.params.at("pattern") != "ascending" || c.n < 16 || c.n >= (size_t(1) << 31))
    throw std::invalid_argument("pattern: ascending (16 <= n < 2^31) is the one pattern part 2 knows");
  const size_t n = c.n;
  return labkit::FreshInput<float>(n, [n](float* out, uint64_t seed, cudaStream_t stream) {
    constexpr uint32_t lowest_finite_key = 0x00800000u, highest_finite_key = 0xFF7FFFFFu;
    const uint64_t bits = labkit::splitmix64(seed);
    const uint64_t first_keys = uint64_t(highest_finite_key) - lowest_finite_key + 2 - n;  // first_key + n - 1 finite
    const uint32_t first_key = lowest_finite_key + uint32_t(bits % first_keys);
    const size_t tie = n - 1 - size_t((bits >> 32) % (n / 16));
    ascending_kernel<<<1024, 256, 0, stream>>>(out, n, first_key, tie);
  });
}

struct FloatPerfBuffers {
  explicit FloatPerfBuffers(const Case& c) : in(float_perf_input(c)), index(1), expected(1), cub(c.n) {}
  labkit::FreshInput<float> in;
  labkit::TimedOutput<int64_t> index;
  DeviceBuffer<int64_t> expected;
  CubArgmax cub;
};

labkit::PerfSubject float_perf_subject(labkit::Function<decltype(argmax_float)> fn, const Case& c,
                                       FloatPerfBuffers& in) {
  return {labkit::timed_call([fn, &c, &in](cudaStream_t stream) { fn(in.in.data(), c.n, in.index.data(), stream); },
                             {&in.in}, {&in.index}),
          [&c, &in]() -> std::string {
            labkit::reference<decltype(argmax_float)>("argmax_float")(in.in.drawn(), c.n, in.expected.data(), nullptr);
            const int64_t expected = in.expected.download()[0];
            const int64_t actual = in.index.collected()[0];
            return actual == expected ? ""
                                      : "expected index " + std::to_string(expected) + ", got " + std::to_string(actual);
          }};
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("dot matches an exact CPU sum on every run; argmax matches std::max_element") {
    labkit::for_each_correctness_case([](const Case& c) { is_argmax_case(c) ? check_argmax(c) : check_dot(c); },
                                      is_part1_case);
  }
  TEST_CASE("argmax_float matches std::max_element on every run") {
    labkit::for_each_correctness_case([](const Case& c) { check_argmax_float(c); }, is_argmax_float_case);
  }
}

TEST_SUITE("performance") {
  TEST_CASE("dot throughput against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      PerfBuffers buffers(c);
      const double bytes_read = 2.0 * sizeof(int32_t) * double(c.n);
      labkit::measure_performance(c, bytes_read, perf_subject(labkit::student<decltype(dot)>("dot"), c, buffers),
                                  perf_subject(labkit::reference<decltype(dot)>("dot"), c, buffers),
                                  {"cub::DeviceReduce::TransformReduce", perf_subject(std::ref(buffers.cub), c, buffers)});
    }, is_part1_case);
  }
  TEST_CASE("argmax_float throughput against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      FloatPerfBuffers buffers(c);
      const double bytes_read = sizeof(float) * double(c.n);
      labkit::measure_performance(
          c, bytes_read, float_perf_subject(labkit::student<decltype(argmax_float)>("argmax_float"), c, buffers),
          float_perf_subject(labkit::reference<decltype(argmax_float)>("argmax_float"), c, buffers),
          {"cub::DeviceReduce::ArgMax", float_perf_subject(std::ref(buffers.cub), c, buffers)});
    }, is_argmax_float_case);
  }
}
