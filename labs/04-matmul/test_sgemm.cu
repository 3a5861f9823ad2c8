// Lab 04 checks: the student's sgemm against a double-precision dot product on every dataset
// case, then its speed against the anchor each performance case names (naive-coalesced,
// tiled or cublas: see sgemm_anchors.cuh). Part 2, bf16_gemm (the cases with `gemm: bf16`), the
// same way against a bound on FP32 accumulation derived below, and timed against
// cublasGemmEx.
#include "sgemm.h"
#include "sgemm_anchors.cuh"

#include <labkit/lab.h>
#include <labkit/shared_memory.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;

struct Shape {
  int m = 0, n = 0, k = 0;
  float alpha = 1, beta = 0;
};

// `n` is the dataset's size field; m and k are lab parameters.
Shape shape_of(const Case& c) {
  return {int(c.integer("m")), int(c.n), int(c.integer("k")), float(c.number("alpha", 1)),
          float(c.number("beta", 0))};
}

// 256 bytes each side: the matrix keeps cudaMalloc's alignment. None under compute-sanitizer:
// the matrix then ends where its mapping ends, so memcheck names the kernel's line that reads
// past it (within the bands, the read is legal and only the NaN tells).
size_t guard_floats() { return labkit::device_buffers_at_mapping_end() ? 0 : 64; }
constexpr uint32_t guard_bits = 0x7FC0DEADu;  // a quiet NaN: used if read, recognised if written

float guard_value() {
  float f;
  std::memcpy(&f, &guard_bits, sizeof f);
  return f;
}

bool is_guard(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits == guard_bits;
}

// A matrix on the device between two guard bands of NaN: reading past its ends poisons the
// result and writing past them is detected. The bands are 256 bytes whatever the element, so
// the matrix keeps cudaMalloc's alignment.
template <class T>
T default_guard() {
  if constexpr (std::is_same_v<T, float>) return guard_value();
  else return T{};
}

template <class T = float>
class GuardedMatrix {
public:
  explicit GuardedMatrix(const std::vector<T>& values, T guard = default_guard<T>())
      : buffer_(with_guards(values, guard)) {}
  T* data() { return buffer_.data() + guards(); }
  std::vector<T> download_with_guards() const { return buffer_.download(); }
  static size_t guards() { return guard_floats() * sizeof(float) / sizeof(T); }

private:
  static std::vector<T> with_guards(const std::vector<T>& values, T guard) {
    std::vector<T> all(values.size() + 2 * guards(), guard);
    std::copy(values.begin(), values.end(), all.begin() + guards());
    return all;
  }
  DeviceBuffer<T> buffer_;
};

struct Operands {
  std::vector<float> a, b, c;  // c: C before the call (all NaN when beta is 0)
};

Operands make_operands(const Shape& s, labkit::InputSpec spec) {
  Operands ops;
  ops.a = labkit::generate<float>(size_t(s.m) * s.k, spec);
  spec.seed += 1;
  ops.b = labkit::generate<float>(size_t(s.k) * s.n, spec);
  spec.seed += 1;
  if (s.beta != 0)
    ops.c = labkit::generate<float>(size_t(s.m) * s.n, spec);
  else
    ops.c.assign(size_t(s.m) * s.n, std::numeric_limits<float>::quiet_NaN());
  return ops;
}

// One element of C worked out in double, with the tolerance an FP32 computation earns: the
// dot product's rounding grows with k and the products' size, whatever the summation order.
struct Expected {
  double value = 0;
  double tolerance = 0;
  double dot = 0;    // A B alone, for naming alpha/beta mistakes
  double scale = 0;  // the size of what was summed, for telling rounding from wrong terms
};

// alpha (A B) + beta C for one element, from its dot product in double and the sum of its
// products' squares.
Expected expected_from(const Shape& s, double dot, double sum_of_squares, double old_c) {
  constexpr double unit_roundoff = 0x1.0p-24;
  const double value = double(s.alpha) * dot + double(s.beta) * old_c;
  // 8 u sqrt(k * sum of squares) is ~20 standard deviations of a sequential FP32 sum's error,
  // and a few hundred times smaller than what TF32 inputs cost.
  const double tolerance = std::fabs(s.alpha) * 8 * unit_roundoff * std::sqrt(s.k * sum_of_squares) +
                           4 * unit_roundoff * (std::fabs(s.alpha * dot) + std::fabs(s.beta * old_c)) + 1e-30;
  const double scale = std::fabs(s.alpha) * std::sqrt(s.k * sum_of_squares) + std::fabs(s.beta * old_c);
  return {value, tolerance, dot, scale};
}

class HostReference {
public:
  HostReference(const Shape& s, const Operands& ops) : s_(s), ops_(ops), bt_(size_t(s.n) * s.k) {
    for (int p = 0; p < s.k; ++p)
      for (int col = 0; col < s.n; ++col) bt_[size_t(col) * s.k + p] = ops.b[size_t(p) * s.n + col];
  }

  Expected at(size_t index) const {
    const size_t row = index / s_.n, col = index % s_.n;
    const float* a_row = ops_.a.data() + row * s_.k;
    const float* b_col = bt_.data() + col * s_.k;
    double dot = 0, sum_of_squares = 0;
    for (int p = 0; p < s_.k; ++p) {
      const double product = double(a_row[p]) * double(b_col[p]);
      dot += product;
      sum_of_squares += product * product;
    }
    return expected_from(s_, dot, sum_of_squares, s_.beta != 0 ? double(ops_.c[index]) : 0.0);
  }

private:
  Shape s_;
  const Operands& ops_;
  std::vector<float> bt_;
};

// Which elements of C are checked: all of them when that is cheap, otherwise the first and last
// rows and columns (where edge tiles go wrong) and `random_count` positions fixed by the seed.
std::vector<size_t> checked_positions(const Shape& s, uint64_t seed, size_t random_count) {
  const size_t count = size_t(s.m) * s.n;
  std::vector<size_t> positions;
  if (double(count) * s.k <= double(1 << 27)) {
    positions.resize(count);
    for (size_t i = 0; i < count; ++i) positions[i] = i;
    return positions;
  }
  for (int col = 0; col < s.n; ++col) {
    positions.push_back(size_t(col));
    positions.push_back(size_t(s.m - 1) * s.n + col);
  }
  for (int row = 0; row < s.m; ++row) {
    positions.push_back(size_t(row) * s.n);
    positions.push_back(size_t(row) * s.n + s.n - 1);
  }
  for (size_t i = 0; i < random_count; ++i) positions.push_back(labkit::splitmix64(seed + i) % count);
  return positions;
}

struct Checked {
  std::vector<size_t> positions;
  std::vector<Expected> expected;
};

Checked work_out(const Shape& s, const Operands& ops, uint64_t seed, size_t random_count) {
  Checked checked;
  checked.positions = checked_positions(s, seed, random_count);
  const HostReference reference(s, ops);
  checked.expected.resize(checked.positions.size());
  for (size_t i = 0; i < checked.positions.size(); ++i) checked.expected[i] = reference.at(checked.positions[i]);
  return checked;
}

// `got(i)`: what C holds at checked.positions[i].
template <class Got>
labkit::Comparison compare_checked(const Checked& checked, Got got_at) {
  labkit::Comparison result;
  result.checked = checked.positions.size();
  for (size_t i = 0; i < checked.positions.size(); ++i) {
    const Expected& e = checked.expected[i];
    const float got = got_at(i);
    if (!std::isnan(got) && std::fabs(double(got) - e.value) <= e.tolerance) continue;
    if (result.mismatches++ < labkit::mismatches_reported)
      result.first.push_back({checked.positions[i], labkit::detail::show(float(e.value)), labkit::detail::show(got)});
  }
  return result;
}

labkit::Comparison compare(const Checked& checked, const std::vector<float>& actual) {
  return compare_checked(checked, [&](size_t i) { return actual[checked.positions[i]]; });
}

// Does every checked element match `formula(dot, old C)` instead of alpha A B + beta C?
template <class Formula>
bool all_match(const Checked& checked, const Operands& ops, const Shape& s, const std::vector<float>& actual,
               Formula formula) {
  for (size_t i = 0; i < checked.positions.size(); ++i) {
    const size_t at = checked.positions[i];
    const double old_c = s.beta != 0 ? double(ops.c[at]) : 0.0;
    const double want = formula(checked.expected[i].dot, old_c);
    const double slack = checked.expected[i].tolerance + 4 * 0x1.0p-24 * std::fabs(want);
    if (std::isnan(actual[at]) || std::fabs(double(actual[at]) - want) > slack) return false;
  }
  return true;
}

std::string scalar_mistake(const Checked& checked, const Operands& ops, const Shape& s, const std::vector<float>& c) {
  const double alpha = s.alpha, beta = s.beta;
  if (beta != 0 && all_match(checked, ops, s, c, [&](double dot, double) { return alpha * dot; }))
    return "C came back as alpha*A*B: the beta*C term is missing";
  if (alpha != 1 && all_match(checked, ops, s, c, [&](double dot, double old) { return dot + beta * old; }))
    return "C came back as A*B + beta*C: alpha is not applied";
  if (all_match(checked, ops, s, c, [](double dot, double old) { return dot + old; }))
    return "C came back as A*B + C: alpha and beta are not applied";
  if (all_match(checked, ops, s, c, [](double dot, double) { return dot; }))
    return "C came back as A*B: alpha and beta are not applied";
  return "";
}

bool tile_multiple(const Shape& s) { return s.m % 32 == 0 && s.n % 32 == 0 && s.k % 32 == 0; }

// Most elements a little off, none by much: the signature of rounding coarser than FP32 (TF32
// keeps 10 bits of mantissa: errors near 2^-11 of the terms' size), not of a missing or extra term.
bool low_precision(const Checked& checked, const std::vector<float>& c) {
  size_t off = 0;
  double worst = 0;
  for (size_t i = 0; i < checked.positions.size(); ++i) {
    const Expected& e = checked.expected[i];
    const double error = std::fabs(double(c[checked.positions[i]]) - e.value);
    if (error <= e.tolerance) continue;
    ++off;
    worst = std::max(worst, e.scale > 0 ? error / e.scale : INFINITY);
  }
  return off * 4 > checked.positions.size() && worst < 0x1.0p-9;
}

// The mistakes both parts name the same way: writes past C, NaN in the output, alpha or beta
// misused; "" when none fits. `write_hint` and `read_hint` say what went wrong at the edge in
// the part's own terms.
std::string edge_or_scalar_mistake(const Shape& s, const Operands& ops, const Checked& checked,
                                   const std::vector<float>& c, size_t guard_writes, bool nan_from_c,
                                   const std::string& write_hint, const std::string& read_hint) {
  if (guard_writes != 0) return std::to_string(guard_writes) + " floats just outside C were overwritten: " + write_hint;
  size_t nans = 0;
  for (size_t at : checked.positions) nans += std::isnan(c[at]);
  if (nans != 0 && nan_from_c)
    return "NaN in the output: C held NaN before the call and beta is 0, so C must not be read "
           "(0 * NaN is NaN; with C zeroed the NaN goes away)";
  if (nans != 0) return "NaN in the output: " + read_hint;
  if (s.alpha != 1 || s.beta != 0) return scalar_mistake(checked, ops, s, c);
  return "";
}

// Names the likely mistake from the shape of the error.
std::string diagnose(const Shape& s, const Operands& ops, const Checked& checked, const std::vector<float>& c,
                     size_t guard_writes, bool nan_from_c) {
  const std::string edge = edge_or_scalar_mistake(
      s, ops, checked, c, guard_writes, nan_from_c,
      "edge tiles read or write outside the matrix (hint: store only where row < m and col < n)",
      "edge tiles read or write outside the matrix (the memory just outside A and B holds NaN; hint: load "
      "zeros past row m, column n and depth k)");
  if (!edge.empty()) return edge;
  if (low_precision(checked, c))
    return "values are close but not FP32-accurate (errors like TF32 or half-precision rounding): "
           "multiply and accumulate in FP32, without tensor cores";
  if (!tile_multiple(s))
    return "correct on tile multiples only? edge tiles read or write outside the matrix (hint: m, n "
           "and k here are not multiples of your tiles: the last tile in each direction is partial)";
  return "wrong values (hint: check which row and column each thread owns, that every k contributes "
         "exactly once, and that you accumulate in FP32, not TF32 or half precision)";
}

size_t count_guard_writes(const std::vector<float>& with_guards) {
  size_t changed = 0;
  for (size_t i = 0; i < guard_floats(); ++i) {
    changed += !is_guard(with_guards[i]);
    changed += !is_guard(with_guards[with_guards.size() - 1 - i]);
  }
  return changed;
}

std::string locate_in(const Shape& s, size_t index) {
  return "row " + std::to_string(index / s.n) + ", column " + std::to_string(index % s.n);
}

// Runs the student again with C zeroed instead of NaN: if the checked outputs are then free of
// NaN, the NaN came from reading C, not from reading outside A or B.
bool nan_goes_away_with_zero_c(const Shape& s, GuardedMatrix<>& d_a, GuardedMatrix<>& d_b, const Checked& checked) {
  GuardedMatrix<> d_c(std::vector<float>(size_t(s.m) * s.n, 0.f));
  labkit::student<decltype(sgemm)>("sgemm")(s.m, s.n, s.k, s.alpha, d_a.data(), d_b.data(), s.beta, d_c.data(),
                                           nullptr);
  CUDA_CHECK_KERNELS(nullptr);
  const std::vector<float> with_guards = d_c.download_with_guards();
  for (size_t at : checked.positions)
    if (std::isnan(with_guards[guard_floats() + at])) return false;
  return true;
}

// For `grade export`: the operands, and the whole expected C worked out in double.
void export_operands(const Case& c, const Shape& s, const Operands& ops) {
  if (labkit::export_dir().empty()) return;
  labkit::export_array(c, "a", ops.a, {size_t(s.m), size_t(s.k)});
  labkit::export_array(c, "b", ops.b, {size_t(s.k), size_t(s.n)});
  if (s.beta != 0) labkit::export_array(c, "c_before", ops.c, {size_t(s.m), size_t(s.n)});
  std::vector<double> expected(size_t(s.m) * s.n);
  for (int row = 0; row < s.m; ++row)
    for (int col = 0; col < s.n; ++col) {
      double dot = 0;
      for (int p = 0; p < s.k; ++p) dot += double(ops.a[size_t(row) * s.k + p]) * ops.b[size_t(p) * s.n + col];
      const size_t at = size_t(row) * s.n + col;
      expected[at] = s.alpha * dot + (s.beta != 0 ? double(s.beta) * ops.c[at] : 0.0);
    }
  labkit::export_array(c, "expected_c", expected, {size_t(s.m), size_t(s.n)});
}

void check_sgemm(const Case& c) {
  const Shape s = shape_of(c);
  const Operands ops = make_operands(s, c.input);
  export_operands(c, s, ops);
  GuardedMatrix<> d_a(ops.a), d_b(ops.b), d_c(ops.c);
  labkit::student<decltype(sgemm)>("sgemm")(s.m, s.n, s.k, s.alpha, d_a.data(), d_b.data(), s.beta, d_c.data(),
                                           nullptr);
  CUDA_CHECK_KERNELS(nullptr);

  const std::vector<float> with_guards = d_c.download_with_guards();
  const std::vector<float> actual(with_guards.begin() + guard_floats(), with_guards.end() - guard_floats());
  const Checked checked = work_out(s, ops, c.input.seed, 4096);
  const labkit::Comparison comparison = compare(checked, actual);
  const size_t guard_writes = count_guard_writes(with_guards);
  const bool ok = comparison.ok() && guard_writes == 0;
  const bool nan_from_c = !ok && s.beta == 0 && nan_goes_away_with_zero_c(s, d_a, d_b, checked);
  labkit::verdict(c, ok,
                  ok ? "" : diagnose(s, ops, checked, actual, guard_writes, nan_from_c) + ". " +
                                comparison.describe([&](size_t i) { return locate_in(s, i); }));
}

__device__ double as_double(float v) { return v; }
__device__ double as_double(__nv_bfloat16 v) { return __bfloat162float(v); }

// For each position of C, its dot product in double and beside it what the operands' error
// bound reads: the sum of the products' squares for FP32 (expected_from), of their magnitudes
// for BF16 (bf16_expected_from). One warp per element, so that every timed call's drawn
// operands are checked without copying them to the host.
template <typename T>
__global__ void dot_products_kernel(const T* a, const T* b, int n, int k, const size_t* positions, size_t count,
                                    double2* out) {
  const size_t warp = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= count) return;
  const size_t row = positions[warp] / n, col = positions[warp] % n;
  double dot = 0, spread = 0;
  for (int p = lane; p < k; p += 32) {
    const double product = as_double(a[row * k + p]) * as_double(b[size_t(p) * n + col]);
    dot += product;
    spread += std::is_same_v<T, float> ? product * product : fabs(product);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    dot += __shfl_down_sync(0xffffffffu, dot, offset);
    spread += __shfl_down_sync(0xffffffffu, spread, offset);
  }
  if (lane == 0) out[warp] = make_double2(dot, spread);
}

__global__ void gather_kernel(const float* c, const size_t* positions, size_t count, float* out) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = c[positions[i]];
}

// Minimum traffic: A and B read once, C written once (and read first when beta != 0).
double bytes_moved(const Shape& s) {
  const double c_passes = s.beta != 0 ? 2 : 1;
  return sizeof(float) * (double(s.m) * s.k + double(s.k) * s.n + c_passes * s.m * s.n);
}

// ---- Part 2: bf16_gemm ------------------------------------------------------------------------

// The cases of part 2 carry `gemm: bf16`; every other case is sgemm's.
bool is_bf16_case(const Case& c) { return c.has("gemm") && c.params.at("gemm") == "bf16"; }
bool is_sgemm_case(const Case& c) { return !is_bf16_case(c); }

// float -> BF16, rounding to nearest even (the inputs are finite).
uint16_t bf16_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

__nv_bfloat16 bf16_from_bits(uint16_t bits) {
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __nv_bfloat16(raw);
}

float float_from_bf16_bits(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

constexpr uint16_t bf16_guard_bits = 0x7FC0u;  // a quiet NaN in BF16

// The operands of a part 2 case: A and B drawn as for sgemm and rounded to BF16. `ops` holds
// the BF16 values as floats (exactly), for the host's reference; `a` and `b` the BF16 bits.
struct Bf16Operands {
  Operands ops;
  std::vector<__nv_bfloat16> a, b;
};

Bf16Operands make_bf16_operands(const Shape& s, const labkit::InputSpec& spec) {
  Bf16Operands out;
  out.ops = make_operands(s, spec);
  const auto round = [](std::vector<float>& values, std::vector<__nv_bfloat16>& bf16) {
    bf16.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t bits = bf16_bits(values[i]);
      bf16[i] = bf16_from_bits(bits);
      values[i] = float_from_bf16_bits(bits);
    }
  };
  round(out.ops.a, out.a);
  round(out.ops.b, out.b);
  return out;
}

// The tolerance, derived rather than guessed. A and B hold BF16 values (8-bit significands),
// so every product a_ik b_kj has at most 16 significant bits and is exact in FP32: the only
// error of an FP32-accumulating GEMM is in its additions, then alpha's multiply and beta's
// fused add. Summed in any order with FP32 additions rounded to nearest, k terms are off by at
// most gamma_(k-1) sum |a_ik b_kj|, with gamma_j = j u / (1 - j u) and u = 2^-24 (Higham,
// Accuracy and Stability, 3.1). Tensor cores do not round to nearest inside an MMA: they add
// a group of g products and the running sum at once, aligning each addend to the largest and
// dropping the bits shifted out, then truncate the sum. Every addend then loses less than
// 2^-23 of the group's largest term and the sum less than 2^-23 of itself, both at most
// S = sum |a_ik b_kj| (to first order), so a group costs under (g + 2) 2^-23 S and the k / g
// groups under k (1 + 2 / g) 2u S: 3 k u S for groups of 4 (Fasi, Higham, Mikaitis and
// Pranesh measured 4 to 8 on V100, T4 and A100), 4 k u S even for groups of 2. So gamma_(4k)
// covers the tensor cores and any order of rounded FP32 additions alike. The double sum the checks
// compare with is exact to 2^-53 relative per term, far below that.
//   |c - c_exact| <= gamma_(4k) |alpha| sum_p |a_ip b_pj| + 2u |alpha (A B)_ij| + 2u |beta c_ij|
// The last two terms: alpha's product, beta's product and the add, each rounded once.
// What it rejects: a sum kept in BF16 (u = 2^-9) or FP16 (2^-12) is off by far more wherever
// the terms share a sign (the `positive` cases, where sum |p| = |sum p| and the bound is a
// relative 4 k u: 1.5e-4 at k = 640, while a BF16 running sum stalls once it is 2^8 times the
// terms).
double gamma_of(double terms) {
  constexpr double unit_roundoff = 0x1.0p-24;
  return terms * unit_roundoff / (1 - terms * unit_roundoff);
}

Expected bf16_expected_from(const Shape& s, double dot, double abs_sum, double old_c) {
  constexpr double unit_roundoff = 0x1.0p-24;
  const double value = double(s.alpha) * dot + double(s.beta) * old_c;
  const double scaled_terms = std::fabs(s.alpha) * abs_sum;
  const double tolerance = gamma_of(4.0 * s.k) * scaled_terms + 2 * unit_roundoff * std::fabs(s.alpha * dot) +
                           2 * unit_roundoff * std::fabs(s.beta * old_c) + 1e-30;
  return {value, tolerance, dot, scaled_terms + std::fabs(s.beta * old_c)};
}

Checked bf16_work_out(const Shape& s, const Operands& ops, uint64_t seed, size_t random_count) {
  Checked checked;
  checked.positions = checked_positions(s, seed, random_count);
  std::vector<float> bt(size_t(s.n) * s.k);
  for (int p = 0; p < s.k; ++p)
    for (int col = 0; col < s.n; ++col) bt[size_t(col) * s.k + p] = ops.b[size_t(p) * s.n + col];
  checked.expected.resize(checked.positions.size());
  labkit::parallel_chunks(checked.positions.size(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const size_t at = checked.positions[i], row = at / s.n, col = at % s.n;
      const float* a_row = ops.a.data() + row * s.k;
      const float* b_col = bt.data() + col * s.k;
      double dot = 0, abs_sum = 0;
      for (int p = 0; p < s.k; ++p) {
        const double product = double(a_row[p]) * double(b_col[p]);  // exact
        dot += product;
        abs_sum += std::fabs(product);
      }
      checked.expected[i] = bf16_expected_from(s, dot, abs_sum, s.beta != 0 ? double(ops.c[at]) : 0.0);
    }
  });
  return checked;
}

// The signatures of a sum kept in BF16 or FP16 along the way, among the checked elements that
// are off (most of them must be). Strong: the wrong values themselves fit in 16 bits (their
// FP32 significands end in 13 zero bits, which one FP32 result in 8192 does by chance: the sum
// was rounded to 16 bits and widened at the end). Weak: every error is a small share of the
// terms' size, which a sum missing a few terms (a skipped partial tile) also gives.
enum class SixteenBit { no, values, small_errors };

SixteenBit sixteen_bit_sums(const Checked& checked, const std::vector<float>& c) {
  size_t off = 0, off_nonzero = 0, off_sixteen_bit = 0;
  bool all_small = true;
  for (size_t i = 0; i < checked.positions.size(); ++i) {
    const Expected& e = checked.expected[i];
    const float got = c[checked.positions[i]];
    const double error = std::fabs(double(got) - e.value);
    if (std::isnan(error)) return SixteenBit::no;
    if (error <= e.tolerance) continue;
    ++off;
    all_small = all_small && error <= e.scale * 0x1.0p-4;
    uint32_t bits;
    std::memcpy(&bits, &got, sizeof bits);
    if (got != 0.f) {
      ++off_nonzero;
      off_sixteen_bit += (bits & 0x1FFFu) == 0;
    }
  }
  if (off * 2 <= checked.positions.size()) return SixteenBit::no;
  if (off_nonzero > 0 && off_sixteen_bit * 10 >= off_nonzero * 9) return SixteenBit::values;
  return all_small ? SixteenBit::small_errors : SixteenBit::no;
}

// The product A B' where every 16x16 block of B (or of A) is transposed in place: what a
// fragment loaded with the other layout (wmma::col_major for a row-major tile, or ldmatrix
// without .trans for B) multiplies. Only for shapes made of whole 16x16 blocks.
bool matches_blocks_transposed(const Shape& s, const Operands& ops, const Checked& checked, const std::vector<float>& c,
                               bool transpose_b) {
  if (s.m % 16 != 0 || s.n % 16 != 0 || s.k % 16 != 0) return false;
  size_t right = 0;
  for (size_t i = 0; i < checked.positions.size(); ++i) {
    const size_t at = checked.positions[i];
    const int row = int(at / s.n), col = int(at % s.n);
    double dot = 0;
    for (int p = 0; p < s.k; ++p) {
      double a, b;
      if (transpose_b) {
        const int p0 = p / 16 * 16, c0 = col / 16 * 16;
        a = ops.a[size_t(row) * s.k + p];
        b = ops.b[size_t(p0 + (col - c0)) * s.n + c0 + (p - p0)];
      } else {
        const int r0 = row / 16 * 16, p0 = p / 16 * 16;
        a = ops.a[size_t(r0 + (p - p0)) * s.k + p0 + (row - r0)];
        b = ops.b[size_t(p) * s.n + col];
      }
      dot += a * b;
    }
    const double old_c = s.beta != 0 ? double(ops.c[at]) : 0.0;
    const double want = double(s.alpha) * dot + double(s.beta) * old_c;
    right += std::fabs(double(c[at]) - want) <= checked.expected[i].tolerance;
  }
  return right * 10 >= checked.positions.size() * 9;
}

// Part 2's whole tiles as the README's kernels use them: 128x128 blocks, k in steps of 32.
bool bf16_tile_multiple(const Shape& s) { return s.m % 128 == 0 && s.n % 128 == 0 && s.k % 32 == 0; }

std::string diagnose_bf16(const Shape& s, const Operands& ops, const Checked& checked, const std::vector<float>& c,
                          size_t guard_writes, bool nan_from_c) {
  const std::string edge = edge_or_scalar_mistake(
      s, ops, checked, c, guard_writes, nan_from_c,
      "edge tiles write outside the matrix (hint: store a fragment's values only where row < m and col < n; "
      "a whole 16x16 store_matrix_sync at the edge writes past it)",
      "edge tiles read outside A or B (the memory just outside them holds NaN; hint: fill the shared-memory "
      "tile with zeros past row m, column n and depth k, e.g. cp.async with a source size of 0, rather than "
      "loading a whole 16-byte vector at the edge)");
  if (!edge.empty()) return edge;
  if (matches_blocks_transposed(s, ops, checked, c, true))
    return "C is A times B with every 16x16 block of B transposed: B's fragments are read with the wrong "
           "layout (hint: B is row-major, k by n: wmma::matrix_b with wmma::row_major and the tile's width "
           "as leading dimension; with mma.sync, ldmatrix .trans for a k-major B tile)";
  if (matches_blocks_transposed(s, ops, checked, c, false))
    return "C is A times B with every 16x16 block of A transposed: A's fragments are read with the wrong "
           "layout (hint: A is row-major, m by k: wmma::matrix_a with wmma::row_major and the tile's depth "
           "as leading dimension; with mma.sync, ldmatrix without .trans)";
  const std::string sixteen_bit_hint =
      "values are close but not FP32-accurate: the sums look rounded to BF16 or FP16 along the way "
      "(hint: keep the accumulators in FP32, wmma::fragment<wmma::accumulator, 16, 16, 16, float> or "
      "mma.sync's .f32 accumulators; only the inputs are BF16)";
  const SixteenBit sums = sixteen_bit_sums(checked, c);
  if (sums == SixteenBit::values) return sixteen_bit_hint;
  if (!bf16_tile_multiple(s))
    return "correct on tile multiples only? edge tiles read or write outside the matrix (hint: m, n and k "
           "here are not multiples of your tiles, k may be odd: zero-fill the partial tiles, and take a "
           "checked path where a row of A or B is not 16-byte aligned)";
  if (sums == SixteenBit::small_errors) return sixteen_bit_hint;
  return "wrong values (hint: check each fragment's layout and leading dimension, that every k-tile is "
         "added once, that the copies of a stage have landed before it is read (cp.async.wait_group, then "
         "__syncthreads), and that you accumulate in FP32)";
}

void check_bf16_gemm(const Case& c) {
  const Shape s = shape_of(c);
  const Bf16Operands in = make_bf16_operands(s, c.input);
  export_operands(c, s, in.ops);  // A and B as float32 arrays holding the BF16 values exactly
  const __nv_bfloat16 guard = bf16_from_bits(bf16_guard_bits);
  GuardedMatrix<__nv_bfloat16> d_a(in.a, guard), d_b(in.b, guard);
  GuardedMatrix<> d_c(in.ops.c);
  const auto student = labkit::student<decltype(bf16_gemm)>("bf16_gemm");
  student(s.m, s.n, s.k, s.alpha, d_a.data(), d_b.data(), s.beta, d_c.data(), nullptr);
  CUDA_CHECK_KERNELS(nullptr);

  const std::vector<float> with_guards = d_c.download_with_guards();
  const std::vector<float> actual(with_guards.begin() + guard_floats(), with_guards.end() - guard_floats());
  const Checked checked = bf16_work_out(s, in.ops, c.input.seed, 4096);
  const labkit::Comparison comparison = compare(checked, actual);
  const size_t guard_writes = count_guard_writes(with_guards);
  const bool ok = comparison.ok() && guard_writes == 0;
  bool nan_from_c = false;
  if (!ok && s.beta == 0) {
    // Again with C zeroed: if the checked outputs are then free of NaN, the NaN came from C.
    GuardedMatrix<> zeroed(std::vector<float>(size_t(s.m) * s.n, 0.f));
    student(s.m, s.n, s.k, s.alpha, d_a.data(), d_b.data(), s.beta, zeroed.data(), nullptr);
    CUDA_CHECK_KERNELS(nullptr);
    const std::vector<float> again = zeroed.download_with_guards();
    nan_from_c = std::none_of(checked.positions.begin(), checked.positions.end(),
                              [&](size_t at) { return std::isnan(again[guard_floats() + at]); });
  }
  labkit::verdict(c, ok,
                  ok ? "" : diagnose_bf16(s, in.ops, checked, actual, guard_writes, nan_from_c) + ". " +
                                comparison.describe([&](size_t i) { return locate_in(s, i); }));
}

// A timed BF16 input: the case's distribution drawn in FP32 on the GPU (the harness's
// generators make floats), then rounded to BF16 there, both out of the submission's reach.
labkit::FreshInput<__nv_bfloat16>::Generator bf16_generator(size_t count, const labkit::InputSpec& spec) {
  auto floats = std::make_shared<DeviceBuffer<float>>(count);
  return [floats, count, spec](__nv_bfloat16* out, uint64_t seed, cudaStream_t stream) {
    labkit::InputSpec fresh = spec;
    fresh.seed = seed;
    labkit::generate_on_device(floats->data(), count, fresh, stream);
    sgemm_anchors::round_to_bf16_kernel<<<1024, 256, 0, stream>>>(floats->data(), count, out);
  };
}

// A timed call's operand of type T, drawn afresh for every call on the GPU.
template <typename T>
labkit::FreshInput<T> timed_operand(size_t count, const labkit::InputSpec& spec) {
  if constexpr (std::is_same_v<T, float>)
    return labkit::FreshInput<float>(count, spec);
  else
    return labkit::FreshInput<__nv_bfloat16>(count, bf16_generator(count, spec));
}

// A timed call's buffers (labkit/fresh_input.h), for sgemm (T = float) and bf16_gemm (T =
// __nv_bfloat16): A and B drawn afresh for every call, the C it writes (beta is 0, so C is
// poisoned, not drawn), and the elements of C checked after it: the edges and 1024 random
// positions, new for every call.
template <typename T>
struct PerfBuffers {
  explicit PerfBuffers(const Case& c)
      : shape(shape_of(c)), a(timed_operand<T>(size_t(shape.m) * shape.k, c.input)),
        b(timed_operand<T>(size_t(shape.k) * shape.n, c.input)), d_c(size_t(shape.m) * shape.n) {}

  // The checked positions for the drawn operands, worked out on the GPU, and what C held there.
  std::pair<Checked, std::vector<float>> check() const {
    Checked checked;
    checked.positions = checked_positions(shape, labkit::secret_seed(), 1024);
    const size_t count = checked.positions.size();
    const DeviceBuffer<size_t> d_positions(checked.positions);
    DeviceBuffer<double2> d_sums(count);
    DeviceBuffer<float> d_got(count);
    dot_products_kernel<<<unsigned((count * 32 + 255) / 256), 256>>>(a.drawn(), b.drawn(), shape.n, shape.k,
                                                                      d_positions.data(), count, d_sums.data());
    gather_kernel<<<unsigned((count + 255) / 256), 256>>>(d_c.collected_data(), d_positions.data(), count,
                                                          d_got.data());
    CUDA_CHECK_KERNELS(nullptr);
    for (const double2& sums : d_sums.download()) {
      if constexpr (std::is_same_v<T, float>)
        checked.expected.push_back(expected_from(shape, sums.x, sums.y, 0));
      else
        checked.expected.push_back(bf16_expected_from(shape, sums.x, sums.y, 0));
    }
    return {checked, d_got.download()};
  }

  Shape shape;
  labkit::FreshInput<T> a, b;
  labkit::TimedOutput<float> d_c;
};

// `gemm` (the submission's function, or an anchor of the same signature) on a timed call's
// buffers, and the check of what it wrote.
template <typename T, typename Gemm>
labkit::PerfSubject perf_subject(Gemm gemm, PerfBuffers<T>& in) {
  return {labkit::timed_call([gemm, &in](cudaStream_t stream) {
                               const Shape& s = in.shape;
                               gemm(s.m, s.n, s.k, s.alpha, in.a.data(), in.b.data(), s.beta, in.d_c.data(), stream);
                             },
                             {&in.a, &in.b}, {&in.d_c}),
          [&in] {
            const auto checked_and_got = in.check();
            const std::vector<float>& got = checked_and_got.second;
            return compare_checked(checked_and_got.first, [&got](size_t i) { return got[i]; }).describe();
          }};
}

// A correct call no faster than the CUDA cores' FP32 peak could be: its multiply-adds are
// (most likely) not on the tensor cores, the part's lesson.
labkit::PerfHint cuda_core_speed_hint(double flops) {
  const double peak_gflops = labkit::current_device().peak_fp32_gflops;
  return [flops, peak_gflops](double student_ms) -> std::string {
    const double gflops = flops / (student_ms * 1e6);
    if (peak_gflops <= 0 || gflops > peak_gflops) return "";
    char text[320];
    std::snprintf(text, sizeof text,
                  "%.1f TFLOP/s is no more than this GPU's FP32 peak (%.1f TFLOP/s): the multiply-adds run on the "
                  "CUDA cores, not the tensor cores (README, part 2: WMMA, then mma.sync with ldmatrix)",
                  gflops / 1e3, peak_gflops / 1e3);
    return text;
  };
}

// Minimum traffic: A and B read once (2 bytes an element), C written once.
double bf16_bytes_moved(const Shape& s) {
  return 2.0 * (double(s.m) * s.k + double(s.k) * s.n) + sizeof(float) * double(s.m) * s.n;
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("sgemm matches a double-precision dot product") {
    labkit::for_each_correctness_case([](const Case& c) { check_sgemm(c); }, is_sgemm_case);
  }
  TEST_CASE("bf16_gemm matches a double-precision dot product within FP32 accumulation's bound") {
    labkit::for_each_correctness_case([](const Case& c) { check_bf16_gemm(c); }, is_bf16_case);
  }
}

TEST_SUITE("performance") {
  TEST_CASE("sgemm speed against the anchor of each rung") {
    labkit::for_each_timed_case([&](const Case& c) {
      // Performance cases use beta = 0: C is poisoned before every sample.
      const std::string anchor_name = c.has("anchor") ? c.params.at("anchor") : "cublas";
      PerfBuffers<float> buffers(c);
      const Shape& s = buffers.shape;
      std::printf("%s: %dx%dx%d (m x n x k), %.1f GFLOP, ratio = %s time / your time\n", c.name.c_str(), s.m,
                  s.n, s.k, 2e-9 * s.m * s.n * s.k, anchor_name.c_str());
      const labkit::Work work(bytes_moved(s), 2.0 * s.m * s.n * s.k);
      // cuBLAS beside the chapter's kernels of the lower rungs; the top rung's anchor is cuBLAS.
      labkit::LibraryAnchor library;
      if (anchor_name != "cublas") library = {"cublasSgemm (FP32)", perf_subject(sgemm_anchors::cublas_sgemm, buffers)};
      labkit::measure_performance(c, work, perf_subject(labkit::student<decltype(sgemm)>("sgemm"), buffers),
                                  perf_subject(sgemm_anchors::by_name(anchor_name), buffers), library);
    }, is_sgemm_case);
  }
  TEST_CASE("bf16_gemm speed against cublasGemmEx") {
    labkit::for_each_timed_case([&](const Case& c) {
      // beta = 0: C is poisoned before every sample.
      PerfBuffers<__nv_bfloat16> buffers(c);
      const Shape& s = buffers.shape;
      std::printf("%s: %dx%dx%d (m x n x k), %.1f GFLOP, BF16 in, FP32 out, ratio = cublasGemmEx time / your "
                  "time\n", c.name.c_str(), s.m, s.n, s.k, 2e-9 * s.m * s.n * s.k);
      // Tensor-core work: its floor and the reports' percentage are the tensor cores' BF16 peak.
      const labkit::Work work(bf16_bytes_moved(s), 2.0 * s.m * s.n * s.k, 0, labkit::ComputeUnits::bf16_tensor_cores);
      labkit::measure_performance(c, work,
                                  perf_subject(labkit::student<decltype(bf16_gemm)>("bf16_gemm"), buffers),
                                  perf_subject(sgemm_anchors::cublas_bf16_gemm, buffers), {},
                                  cuda_core_speed_hint(work.flops));
    }, is_bf16_case);
  }
}
