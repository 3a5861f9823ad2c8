// Lab 05 checks: the student's conv2d and conv2d_separable against a double-precision CPU
// cross-correlation on every dataset case (for the separable part, with the 2-D filter built as
// the outer product of its two vectors), with guard bands around the image to catch writes past
// its ends, then their speed against the reference solution's on the performance cases.
#include "conv2d.h"

#include <labkit/device_compare.cuh>
#include <labkit/lab.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;

// ---- shapes and inputs --------------------------------------------------------------------

struct Shape {
  int rows = 0, cols = 0, filter_size = 0;
  int half() const { return filter_size / 2; }
  size_t pixels() const { return size_t(rows) * size_t(cols); }
  LABKIT_HOST_DEVICE size_t taps() const { return size_t(filter_size) * size_t(filter_size); }
};

// `n` is the dataset's size field: the number of columns.
Shape shape_of(const Case& c) {
  const Shape s{int(c.integer("rows")), int(c.n), int(c.integer("filter_size"))};
  if (s.rows < 1 || s.cols < 1 || s.filter_size < 1 || s.filter_size % 2 == 0 || s.filter_size > MAX_FILTER_SIZE)
    throw std::invalid_argument("case " + c.name + " is outside the contract (rows, cols >= 1, odd filter_size <= " +
                                std::to_string(MAX_FILTER_SIZE) + ")");
  return s;
}

std::string location(const Shape& s, size_t index) {
  return "row " + std::to_string(index / size_t(s.cols)) + ", column " + std::to_string(index % size_t(s.cols));
}

std::vector<float> make_image(const Case& c, const Shape& s, uint64_t seed_shift = 0) {
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  return labkit::generate<float>(s.pixels(), spec);
}

std::string filter_kind(const Case& c) { return c.has("filter") ? c.params.at("filter") : "random"; }

// `random`: uniform in [-1, 1] from the case's seed; `box`: the chapter's box filter.
std::vector<float> make_filter(const Case& c, const Shape& s, uint64_t seed_shift = 0) {
  const std::string kind = filter_kind(c);
  if (kind == "box") return std::vector<float>(s.taps(), 1.f / float(s.taps()));
  if (kind != "random") throw std::invalid_argument("case " + c.name + ": unknown filter '" + kind + "'");
  const labkit::InputSpec spec{labkit::Distribution::uniform, labkit::splitmix64(c.input.seed ^ 0xF117E5ull) + seed_shift,
                               -1.0, 1.0};
  return labkit::generate<float>(s.taps(), spec);
}

// A separable filter's two vectors: filter(i, j) = col[i] * row[j].
struct SeparableFilter {
  std::vector<float> row, col;

  // The 2-D filter they stand for, in double: a product of two floats is exact there.
  std::vector<double> outer() const { return outer_product(col, row); }
  static std::vector<double> outer_product(const std::vector<float>& vertical, const std::vector<float>& horizontal) {
    std::vector<double> filter;
    for (float v : vertical)
      for (float h : horizontal) filter.push_back(double(v) * double(h));
    return filter;
  }
};

// Binomial coefficients C(size - 1, i): the discrete Gaussian's shape, exact in float up to 15.
std::vector<float> binomial_row(int size) {
  std::vector<float> row(size_t(size), 1.f);
  for (int i = 1; i < size; ++i) row[size_t(i)] = row[size_t(i - 1)] * float(size - i) / float(i);
  return row;
}

// `gaussian`: normalised binomial coefficients both ways (a symmetric Gaussian blur, the same
// vector twice); `box`: 1 / filter_size both ways (the chapter's box filter); `sobel`: the
// binomial smoothing down the columns and the derivative -h .. h along the rows (for 3, Sobel's
// [1 2 1]^T x [-1 0 1]: two different vectors); `random`: two vectors uniform in [-1, 1].
SeparableFilter make_separable_filter(const Case& c, const Shape& s) {
  const std::string kind = filter_kind(c);
  const int size = s.filter_size;
  if (kind == "gaussian") {
    std::vector<float> weights = binomial_row(size);
    const float total = float(1ull << (size - 1));  // sum of the binomial coefficients
    for (float& w : weights) w /= total;
    return {weights, weights};
  }
  if (kind == "box") {
    const std::vector<float> average(size_t(size), 1.f / float(size));
    return {average, average};
  }
  if (kind == "sobel") {
    std::vector<float> derivative;
    for (int j = 0; j < size; ++j) derivative.push_back(float(j - s.half()));
    return {derivative, binomial_row(size)};
  }
  if (kind != "random") throw std::invalid_argument("case " + c.name + ": unknown separable filter '" + kind + "'");
  const uint64_t seed = labkit::splitmix64(c.input.seed ^ 0x5E9A7ull);
  return {labkit::generate<float>(size_t(size), {labkit::Distribution::uniform, seed, -1.0, 1.0}),
          labkit::generate<float>(size_t(size), {labkit::Distribution::uniform, seed + 1, -1.0, 1.0})};
}

std::vector<double> widened(const std::vector<float>& values) { return {values.begin(), values.end()}; }

// ---- the CPU reference --------------------------------------------------------------------

// How the reference treats the window where it leaves the image. Only `zero_padding` is the
// contract; the others are what common mistakes compute, to name them when they match.
enum class Variant { zero_padding, clamp_to_edge, flipped_filter };

// Each pixel's exact sum, and the sum of the magnitudes of its terms (for the tolerance).
struct PixelSum {
  double value = 0;
  double magnitude = 0;
};

PixelSum correlate_at(const Shape& s, const std::vector<float>& image, const std::vector<double>& filter, int row,
                      int col, Variant variant) {
  const int h = s.half(), fs = s.filter_size;
  PixelSum sum;
  for (int i = 0; i < fs; ++i) {
    int y = row + i - h;
    if (variant == Variant::clamp_to_edge) y = std::clamp(y, 0, s.rows - 1);
    if (y < 0 || y >= s.rows) continue;  // zero padding: the term is 0
    for (int j = 0; j < fs; ++j) {
      int x = col + j - h;
      if (variant == Variant::clamp_to_edge) x = std::clamp(x, 0, s.cols - 1);
      if (x < 0 || x >= s.cols) continue;
      const size_t tap = variant == Variant::flipped_filter ? size_t(fs - 1 - i) * fs + (fs - 1 - j) : size_t(i) * fs + j;
      const double term = double(image[size_t(y) * s.cols + x]) * filter[tap];
      sum.value += term;
      sum.magnitude += std::fabs(term);
    }
  }
  return sum;
}

// The tolerance an FP32 computation earns. An output is a dot product of K = filter_size^2
// terms x * f. Whatever the order of the additions, with or without FMA, FP32 gets within
// gamma_K * sum |x * f| of the exact value, gamma_K = K u / (1 - K u) and u = 2^-24 (Higham,
// "Accuracy and Stability of Numerical Algorithms", eq. 3.5); sum |x * f| is at most
// K * max|image value| * max|filter value|, so the bound follows from the filter size and the
// value ranges, and is measured per pixel here to stay tight where terms cancel. Two more u
// cover the expected value's own rounding to float, and two more the tolerance's; K * FLT_MIN
// covers products that fall below the normal range and are flushed to zero. A wrong term
// (clamped instead of zero, flipped, missing) costs about |x * f|, far above this.
//
// A separable filter's sum may be taken in other orders: a row pass of K = filter_size terms,
// rounded to float, then a column pass of K (within (2 gamma_K + gamma_K^2) sum |x * f|, the
// first pass's error carried through the second's coefficients), or all K^2 terms at once with
// each coefficient col[i] * row[j] rounded too (gamma_{K^2 + 1}); K^2 + 2K roundings cover
// both. A flushed product of the row pass is carried through the column vector, hence the
// vectors' sums of magnitudes in the underflow term.
struct ErrorModel {
  double roundings = 0;  // k in gamma_k
  double underflows = 0; // products that may be flushed, each costing up to FLT_MIN
};

LABKIT_HOST_DEVICE ErrorModel conv2d_error(const Shape& s) { return {double(s.taps()), double(s.taps())}; }

LABKIT_HOST_DEVICE ErrorModel separable_error(const Shape& s, double row_magnitude, double col_magnitude) {
  const double k = double(s.taps()) + 2.0 * s.filter_size;
  return {k, k * (1 + row_magnitude + col_magnitude)};
}

double sum_of_magnitudes(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values) sum += std::fabs(double(v));
  return sum;
}

ErrorModel separable_error(const Shape& s, const SeparableFilter& filter) {
  return separable_error(s, sum_of_magnitudes(filter.row), sum_of_magnitudes(filter.col));
}

LABKIT_HOST_DEVICE float tolerance_for(const ErrorModel& error, double magnitude) {
  constexpr double u = 0x1.0p-24;
  return float((error.roundings + 4) * u * magnitude + error.underflows * FLT_MIN);
}

struct Expected {
  std::vector<float> value;
  std::vector<float> tolerance;
};

Expected work_out(const Shape& s, const std::vector<float>& image, const std::vector<double>& filter,
                  const ErrorModel& error, Variant variant = Variant::zero_padding) {
  Expected e;
  e.value.resize(s.pixels());
  e.tolerance.resize(s.pixels());
  labkit::parallel_chunks(s.pixels(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const PixelSum sum = correlate_at(s, image, filter, int(i / s.cols), int(i % s.cols), variant);
      e.value[i] = float(sum.value);
      e.tolerance[i] = tolerance_for(error, sum.magnitude);
    }
  });
  return e;
}

bool close_enough(float expected, float tolerance, float actual) {
  return !std::isnan(actual) && std::fabs(double(actual) - double(expected)) <= double(tolerance);
}

// ---- guarded device buffers ---------------------------------------------------------------

constexpr uint32_t input_guard_bits = 0x7FC0DEADu;   // quiet NaNs: poison any result that reads them
constexpr uint32_t output_guard_bits = 0x7FC0BEEFu;  // and are recognised when overwritten
constexpr uint32_t shared_poison_bits = 0x7FC05EEDu;
constexpr uint32_t temp_poison_bits = 0x7FC07E3Du;   // d_temp on entry: a NaN until the row pass writes it
constexpr uint32_t unwritten_bits = 0x01010101u * labkit::poison_byte;

float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Floats of guard on each side of an image: 64 rows and then some, so that a grid rounded up
// to blocks of up to 64 rows, or a halo read of up to MAX_FILTER_SIZE / 2 rows, lands in the
// guard and not in memory that would crash the call. A multiple of 64 floats (256 bytes), so
// the image keeps cudaMalloc's alignment.
size_t guard_floats(const Shape& s) { return (64 * size_t(s.cols) + 64 + 63) / 64 * 64; }

// An image on the device between two guard bands, all in one DeviceBuffer.
class GuardedImage {
public:
  GuardedImage(const Shape& s, const std::vector<float>& values, uint32_t guard_bits)
      : guard_(guard_floats(s)), count_(values.size()), buffer_(with_guards(values, guard_bits)) {}
  float* data() { return buffer_.data() + guard_; }
  std::vector<float> download_all() const { return buffer_.download(); }
  std::vector<float> image_of(const std::vector<float>& all) const {
    return {all.begin() + ptrdiff_t(guard_), all.begin() + ptrdiff_t(guard_ + count_)};
  }
  // How many guard floats before and after the image no longer hold `guard_bits`.
  std::pair<size_t, size_t> overwritten(const std::vector<float>& all, uint32_t guard_bits) const {
    auto changed = [&](size_t begin, size_t end) {
      return size_t(std::count_if(all.begin() + ptrdiff_t(begin), all.begin() + ptrdiff_t(end),
                                  [&](float f) { return bits_of(f) != guard_bits; }));
    };
    return {changed(0, guard_), changed(guard_ + count_, all.size())};
  }

private:
  std::vector<float> with_guards(const std::vector<float>& values, uint32_t guard_bits) const {
    std::vector<float> all(values.size() + 2 * guard_, float_from_bits(guard_bits));
    std::copy(values.begin(), values.end(), all.begin() + ptrdiff_t(guard_));
    return all;
  }
  size_t guard_ = 0;
  size_t count_ = 0;
  DeviceBuffer<float> buffer_;
};

// ---- verdict and diagnosis ----------------------------------------------------------------

// Where a result went wrong, by kind of pixel.
struct Verification {
  labkit::Comparison comparison;
  size_t unwritten = 0;           // still the 0xA5 poison
  size_t nan = 0;                 // NaN where a number was expected
  size_t border_mismatches = 0;   // within filter_size / 2 of an edge: the window leaves the image
  size_t interior_mismatches = 0;
};

bool in_border(const Shape& s, size_t index) {
  const int row = int(index / size_t(s.cols)), col = int(index % size_t(s.cols)), h = s.half();
  return row < h || row >= s.rows - h || col < h || col >= s.cols - h;
}

Verification verify(const Shape& s, const Expected& expected, const std::vector<float>& actual) {
  Verification v;
  v.comparison.checked = actual.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    if (close_enough(expected.value[i], expected.tolerance[i], actual[i])) continue;
    if (bits_of(actual[i]) == unwritten_bits) ++v.unwritten;
    else if (std::isnan(actual[i])) ++v.nan;
    ++(in_border(s, i) ? v.border_mismatches : v.interior_mismatches);
    if (v.comparison.mismatches++ < labkit::mismatches_reported)
      v.comparison.first.push_back(
          {i, labkit::detail::show(expected.value[i]), labkit::detail::show(actual[i])});
  }
  return v;
}

bool matches(const Expected& expected, const std::vector<float>& actual) {
  for (size_t i = 0; i < actual.size(); ++i)
    if (!close_enough(expected.value[i], expected.tolerance[i], actual[i])) return false;
  return true;
}

std::string count_of(size_t part, size_t whole, const char* what) {
  return std::to_string(part) + " of " + std::to_string(whole) + " " + what;
}

std::string diagnose_guards(std::pair<size_t, size_t> overwritten) {
  const auto [before, after] = overwritten;
  std::string where;
  if (after > 0) where = std::to_string(after) + " floats past the end of d_out were overwritten";
  if (before > 0)
    where += (where.empty() ? "" : ", and ") + std::to_string(before) +
             " floats before its start (a negative row or column in the output index?)";
  return "writes outside the image: threads past the last row/column still write (hint: the grid is rounded up "
         "to whole blocks, so the last blocks have threads whose row or column lies outside the image; they must "
         "not store anything: guard the write with `if (row < rows && col < cols)`). " + where +
         ". The checks put guard bands around d_out to catch this; in a real program it silently corrupts "
         "whatever lies next to the output, or the next row's first pixels";
}

// A wrong answer a function part is known to give, by the filter it amounts to (with zero
// padding), and what to tell the student when the output matches it.
struct KnownMistake {
  std::vector<double> filter;
  std::string message;
};

// What a check knows of its function, for the diagnosis: the 2-D filter it should apply, the
// rounding it is allowed, its own known mistakes (tried first) and what a NaN may mean for it.
struct Diagnosis {
  std::vector<double> filter;
  ErrorModel error;
  std::vector<KnownMistake> known_mistakes;
  std::string nan_hint;
};

// Names the likely mistake from where the wrong pixels are and what they hold.
std::string diagnose_values(const Shape& s, const std::vector<float>& image, const Diagnosis& d,
                            const Verification& v, const std::vector<float>& actual) {
  const size_t wrong = v.comparison.mismatches;
  const auto matches_filter = [&](const std::vector<double>& filter, Variant variant) {
    return matches(work_out(s, image, filter, d.error, variant), actual);
  };
  if (v.unwritten > 0)
    return count_of(v.unwritten, s.pixels(), "pixels") +
           " were never written: they still hold the 0xA5 bytes the checks filled d_out with (hint: the grid must "
           "cover every row and column: round the number of blocks up, (cols + block.x - 1) / block.x)";
  if (v.nan > 0)
    return count_of(v.nan, s.pixels(), "pixels") +
           " came back NaN: some read fell outside the input image (the checks surround d_in with NaN; with zero "
           "padding, a pixel outside the image is never read, it counts as 0) or read a shared-memory slot no "
           "thread wrote (the checks fill shared memory with NaN before each call: check the halo loads)" + d.nan_hint;
  for (const KnownMistake& mistake : d.known_mistakes)
    if (matches_filter(mistake.filter, Variant::zero_padding)) return mistake.message;
  // The flipped filter first: on an image too small to have an interior, every pixel is a
  // border pixel, and a flipped filter would pass for a border mistake.
  if (matches_filter(d.filter, Variant::flipped_filter))
    return "the output matches the filter flipped in both directions: that is convolution in the textbook "
           "sense, but the contract (like the chapter) computes cross-correlation, out(r, c) = sum of "
           "in(r + i - h, c + j - h) * filter(i, j), the filter NOT flipped";
  const std::string border_hint = "only border pixels differ: the contract pads with zeros, not the edge value (" +
                                  count_of(wrong, s.pixels(), "pixels") + " are wrong, all within filter_size / 2 = " +
                                  std::to_string(s.half()) + " of an edge, where the window leaves the image";
  if (matches_filter(d.filter, Variant::clamp_to_edge))
    return border_hint + "; the output matches clamp-to-edge, which reads the nearest edge pixel instead, as the "
                         "chapter's v1 does with min/max: count pixels outside the image as 0, as its v2 does)";
  const bool has_interior = s.rows > 2 * s.half() && s.cols > 2 * s.half();
  if (v.interior_mismatches == 0 && has_interior)
    return border_hint + "; with a tile, check that halo slots outside the image hold 0)";
  return count_of(wrong, s.pixels(), "pixels") + " are wrong, " + std::to_string(v.interior_mismatches) +
         " of them away from the borders (hint: check the indexing of the window and of the filter; with a shared "
         "tile, check that the halo is loaded and that every thread waits for the whole tile, __syncthreads(), "
         "before reading it)";
}

void check_conv2d(const Case& c) {
  const Shape s = shape_of(c);
  const std::vector<float> image = make_image(c, s);
  const std::vector<float> filter = make_filter(c, s);
  const Diagnosis diagnosis{widened(filter), conv2d_error(s), {}, ""};
  const Expected expected = work_out(s, image, diagnosis.filter, diagnosis.error);
  labkit::export_array(c, "input", image, {size_t(s.rows), size_t(s.cols)});
  labkit::export_array(c, "filter", filter, {size_t(s.filter_size), size_t(s.filter_size)});
  labkit::export_array(c, "expected_output", expected.value, {size_t(s.rows), size_t(s.cols)});

  GuardedImage d_in(s, image, input_guard_bits);
  GuardedImage d_out(s, std::vector<float>(s.pixels(), float_from_bits(unwritten_bits)), output_guard_bits);
  DeviceBuffer<float> d_filter(filter);
  labkit::poison_student_shared_memory(shared_poison_bits);
  labkit::student<decltype(conv2d)>("conv2d")(d_in.data(), s.rows, s.cols, d_filter.data(), s.filter_size,
                                              d_out.data(), nullptr);
  CUDA_CHECK_KERNELS(nullptr);

  const std::vector<float> input_after = d_in.download_all();
  if (d_in.image_of(input_after) != image || d_in.overwritten(input_after, input_guard_bits) != std::pair<size_t, size_t>{} ||
      d_filter.download() != filter) {
    labkit::verdict(c, false, "conv2d modified its input: d_in and d_filter are const and must come back unchanged");
    return;
  }
  const std::vector<float> output_all = d_out.download_all();
  const auto overwritten = d_out.overwritten(output_all, output_guard_bits);
  const std::vector<float> actual = d_out.image_of(output_all);
  const Verification v = verify(s, expected, actual);
  const auto locate = [&s](size_t i) { return location(s, i); };
  if (overwritten.first + overwritten.second > 0) {
    labkit::verdict(c, false, diagnose_guards(overwritten) + (v.comparison.ok() ? "" : ". " + v.comparison.describe(locate)));
    return;
  }
  labkit::verdict(c, v.comparison.ok(),
                  v.comparison.ok() ? "" : diagnose_values(s, image, diagnosis, v, actual) + ". " + v.comparison.describe(locate));
}

// ---- the separable part -------------------------------------------------------------------

// The mistakes a two-pass version makes with the wrong vector in a pass, as 2-D filters.
std::vector<KnownMistake> separable_mistakes(const SeparableFilter& f) {
  return {
      {SeparableFilter::outer_product(f.row, f.row),
       "the output matches d_row_filter used in both passes, along the rows and again down the columns, with "
       "d_col_filter never read (hint: that is the filter treated as symmetric. The chapter's remark covers "
       "symmetric and separable filters, but only a symmetric one, such as a box or a Gaussian blur, has the same "
       "vector both ways; a separable filter in general has two, like Sobel's [1 2 1] down the columns and "
       "[-1 0 1] along the rows. The column pass must use d_col_filter)"},
      {SeparableFilter::outer_product(f.col, f.col),
       "the output matches d_col_filter used in both passes, with d_row_filter never read (hint: the row pass, "
       "along each row, must use d_row_filter; only a symmetric filter has the same vector both ways)"},
      {SeparableFilter::outer_product(f.row, f.col),
       "the output matches the two vectors swapped: d_row_filter ran down the columns and d_col_filter along the "
       "rows (hint: filter(i, j) = d_col_filter[i] * d_row_filter[j], so d_row_filter[j] weighs column "
       "c + j - h of the same row, and d_col_filter[i] weighs row r + i - h)"},
  };
}

std::string diagnose_temp_guards(std::pair<size_t, size_t> overwritten) {
  return "writes outside d_temp: " + std::to_string(overwritten.second) + " floats past its end and " +
         std::to_string(overwritten.first) + " before its start were overwritten (hint: d_temp holds rows * cols "
         "floats, the intermediate image of a row pass; guard its stores like the output's, `if (row < rows && "
         "col < cols)`)";
}

void check_separable(const Case& c) {
  const Shape s = shape_of(c);
  const std::vector<float> image = make_image(c, s);
  const SeparableFilter filter = make_separable_filter(c, s);
  const Diagnosis diagnosis{
      filter.outer(), separable_error(s, filter), separable_mistakes(filter),
      "; or a pixel of d_temp read before the row pass wrote it (the checks fill d_temp with NaN: the column pass "
      "must wait for the whole row pass, as a second kernel on the same stream does)"};
  const Expected expected = work_out(s, image, diagnosis.filter, diagnosis.error);
  labkit::export_array(c, "input", image, {size_t(s.rows), size_t(s.cols)});
  labkit::export_array(c, "row_filter", filter.row, {size_t(s.filter_size)});
  labkit::export_array(c, "col_filter", filter.col, {size_t(s.filter_size)});
  labkit::export_array(c, "expected_output", expected.value, {size_t(s.rows), size_t(s.cols)});

  GuardedImage d_in(s, image, input_guard_bits);
  GuardedImage d_temp(s, std::vector<float>(s.pixels(), float_from_bits(temp_poison_bits)), output_guard_bits);
  GuardedImage d_out(s, std::vector<float>(s.pixels(), float_from_bits(unwritten_bits)), output_guard_bits);
  DeviceBuffer<float> d_row_filter(filter.row), d_col_filter(filter.col);
  labkit::poison_student_shared_memory(shared_poison_bits);
  labkit::student<decltype(conv2d_separable)>("conv2d_separable")(d_in.data(), s.rows, s.cols, d_row_filter.data(),
                                                                  d_col_filter.data(), s.filter_size, d_temp.data(),
                                                                  d_out.data(), nullptr);
  CUDA_CHECK_KERNELS(nullptr);

  const std::vector<float> input_after = d_in.download_all();
  if (d_in.image_of(input_after) != image || d_in.overwritten(input_after, input_guard_bits) != std::pair<size_t, size_t>{} ||
      d_row_filter.download() != filter.row || d_col_filter.download() != filter.col) {
    labkit::verdict(c, false,
                    "conv2d_separable modified its input: d_in, d_row_filter and d_col_filter are const and must come "
                    "back unchanged (the intermediate image belongs in d_temp)");
    return;
  }
  const auto temp_overwritten = d_temp.overwritten(d_temp.download_all(), output_guard_bits);
  const std::vector<float> output_all = d_out.download_all();
  const auto overwritten = d_out.overwritten(output_all, output_guard_bits);
  const std::vector<float> actual = d_out.image_of(output_all);
  const Verification v = verify(s, expected, actual);
  const auto locate = [&s](size_t i) { return location(s, i); };
  const std::string comparison = v.comparison.ok() ? "" : ". " + v.comparison.describe(locate);
  if (temp_overwritten.first + temp_overwritten.second > 0) {
    labkit::verdict(c, false, diagnose_temp_guards(temp_overwritten) + comparison);
    return;
  }
  if (overwritten.first + overwritten.second > 0) {
    labkit::verdict(c, false, diagnose_guards(overwritten) + comparison);
    return;
  }
  labkit::verdict(c, v.comparison.ok(),
                  v.comparison.ok() ? "" : diagnose_values(s, image, diagnosis, v, actual) + comparison);
}

// ---- performance --------------------------------------------------------------------------

// make_filter's kinds as the spec of a filter drawn on the GPU: `random` uniform in [-1, 1],
// `box` all_same in [c, c] for c = 1 / filter_size^2, the same filter whatever the seed.
labkit::InputSpec filter_spec(const Case& c, const Shape& s) {
  const std::string kind = c.has("filter") ? c.params.at("filter") : "random";
  if (kind == "box") {
    const double coefficient = 1.f / float(s.taps());
    return {labkit::Distribution::all_same, 0, coefficient, coefficient};
  }
  if (kind != "random") throw std::invalid_argument("case " + c.name + ": unknown filter '" + kind + "'");
  return {labkit::Distribution::uniform, 0, -1.0, 1.0};
}

// work_out on the GPU, one thread per pixel: correlate_at's sum with zero padding in double,
// and the tolerance it earns.
__global__ void expected_conv2d_kernel(const float* image, const float* filter, const Shape s, float* value,
                                       float* tolerance) {
  const size_t index = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (index >= size_t(s.rows) * size_t(s.cols)) return;
  const int row = int(index / size_t(s.cols)), col = int(index % size_t(s.cols));
  const int h = s.filter_size / 2, fs = s.filter_size;
  double sum = 0, magnitude = 0;
  for (int i = 0; i < fs; ++i) {
    const int y = row + i - h;
    if (y < 0 || y >= s.rows) continue;
    for (int j = 0; j < fs; ++j) {
      const int x = col + j - h;
      if (x < 0 || x >= s.cols) continue;
      const double term = double(image[size_t(y) * s.cols + x]) * double(filter[size_t(i) * fs + j]);
      sum += term;
      magnitude += fabs(term);
    }
  }
  value[index] = float(sum);
  tolerance[index] = tolerance_for(conv2d_error(s), magnitude);
}

// A timed call's buffers: an image and a filter drawn afresh for every call
// (labkit/fresh_input.h; a filter kept in constant memory from an earlier call gives a wrong
// answer), the output it writes, and the expected output for the same input.
struct PerfBuffers {
  PerfBuffers(const Case& c, const Shape& s)
      : shape(s), image(s.pixels(), c.input), filter(s.taps(), filter_spec(c, s)), out(s.pixels()),
        expected_value(s.pixels()), expected_tolerance(s.pixels()) {}

  // What the checks compare the collected output with, worked out on the GPU from the drawn
  // image and filter.
  void work_out_expected() {
    expected_conv2d_kernel<<<unsigned((shape.pixels() + 255) / 256), 256>>>(
        image.drawn(), filter.drawn(), shape, expected_value.data(), expected_tolerance.data());
    CUDA_CHECK_KERNELS(nullptr);
  }

  Shape shape;
  labkit::FreshInput<float> image, filter;
  labkit::TimedOutput<float> out;
  DeviceBuffer<float> expected_value, expected_tolerance;
};

// close_enough, on the device.
struct NotCloseEnough {
  const float* expected;
  const float* tolerance;
  const float* actual;
  __device__ bool operator()(size_t i) const {
    return isnan(actual[i]) || !(fabs(double(actual[i]) - double(expected[i])) <= double(tolerance[i]));
  }
};

// The collected output against the expected values and tolerances, all in device memory:
// counted on the GPU, and judged on the host (verify, which says where) only when a pixel is off.
std::string check_performance_output(const Shape& s, const DeviceBuffer<float>& expected_value,
                                     const DeviceBuffer<float>& expected_tolerance,
                                     const labkit::TimedOutput<float>& out) {
  const NotCloseEnough wrong{expected_value.data(), expected_tolerance.data(), out.collected_data()};
  if (labkit::count_wrong_on_device(s.pixels(), wrong) == 0) return "";
  const Expected expected{expected_value.download(), expected_tolerance.download()};
  const labkit::Comparison comparison = verify(s, expected, out.collected()).comparison;
  return comparison.describe([&s](size_t i) { return location(s, i); });
}

labkit::PerfSubject perf_subject(labkit::Function<decltype(conv2d)> fn, PerfBuffers& b) {
  return {labkit::timed_call([fn, &b](cudaStream_t stream) {
                               const Shape& s = b.shape;
                               fn(b.image.data(), s.rows, s.cols, b.filter.data(), s.filter_size, b.out.data(), stream);
                             },
                             {&b.image, &b.filter}, {&b.out}),
          [&b] {
            b.work_out_expected();
            return check_performance_output(b.shape, b.expected_value, b.expected_tolerance, b.out);
          }};
}

// The yardstick the reports show beside the reference: a device-to-device copy of the image
// into the output (no library filters an image here), which moves the bytes a filter must.
labkit::LibraryAnchor image_copy(labkit::FreshInput<float>& image, labkit::TimedOutput<float>& out) {
  const auto copy = [&image, &out](cudaStream_t stream) {
    CUDA_CHECK(
        cudaMemcpyAsync(out.data(), image.data(), image.size() * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  };
  return {"cudaMemcpy of the image (device to device)", {labkit::timed_call(copy, {&image}, {&out}), {}}};
}

// A 2-D filter reads each input pixel and writes each output pixel once (the halo's second
// reads come from cache), plus the filter.
double bytes_moved(const Shape& s) { return 2.0 * sizeof(float) * double(s.pixels()) + sizeof(float) * double(s.taps()); }

// What the reports show for a 2-D case. From 9 x 9 on, a tuned kernel is bound by its FMAs
// (one per tap and pixel), not by its bytes: those cases show TFLOP/s and the share of the FP32
// peak, smaller ones GB/s. Shown only: no speed floor, since a correct kernel may do fewer
// operations than the direct sum (an FFT, Winograd's transforms).
labkit::Work conv2d_work(const Shape& s) {
  const double direct_flops = 2.0 * double(s.taps()) * double(s.pixels());
  return {bytes_moved(s), 0, s.filter_size >= 9 ? direct_flops : 0};
}

// ---- performance of the separable part ----------------------------------------------------

// expected_conv2d_kernel for the filter col[i] * row[j], each product taken in double (exact),
// with the separable tolerance.
__global__ void expected_separable_kernel(const float* image, const float* row_filter, const float* col_filter,
                                          const Shape s, float* value, float* tolerance) {
  const size_t index = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (index >= size_t(s.rows) * size_t(s.cols)) return;
  const int row = int(index / size_t(s.cols)), col = int(index % size_t(s.cols));
  const int h = s.filter_size / 2, fs = s.filter_size;
  double sum = 0, magnitude = 0, row_magnitude = 0, col_magnitude = 0;
  for (int k = 0; k < fs; ++k) {
    row_magnitude += fabs(double(row_filter[k]));
    col_magnitude += fabs(double(col_filter[k]));
  }
  for (int i = 0; i < fs; ++i) {
    const int y = row + i - h;
    if (y < 0 || y >= s.rows) continue;
    for (int j = 0; j < fs; ++j) {
      const int x = col + j - h;
      if (x < 0 || x >= s.cols) continue;
      const double term = double(image[size_t(y) * s.cols + x]) * (double(col_filter[i]) * double(row_filter[j]));
      sum += term;
      magnitude += fabs(term);
    }
  }
  value[index] = float(sum);
  tolerance[index] = tolerance_for(separable_error(s, row_magnitude, col_magnitude), magnitude);
}

// PerfBuffers for conv2d_separable: two filter vectors drawn afresh for every call (uniform in
// [-1, 1], independently, so never symmetric), and d_temp. d_temp is neither drawn nor
// collected: its contents on entry are undefined, and no answer can be kept in it from one
// call to the next, since each call's input is new.
struct SeparablePerfBuffers {
  SeparablePerfBuffers(const Case& c, const Shape& s)
      : shape(s), image(s.pixels(), c.input), row_filter(size_t(s.filter_size), vector_spec(c)),
        col_filter(size_t(s.filter_size), vector_spec(c)), temp(s.pixels()), out(s.pixels()),
        expected_value(s.pixels()), expected_tolerance(s.pixels()) {}

  static labkit::InputSpec vector_spec(const Case& c) {
    if (filter_kind(c) != "random")
      throw std::invalid_argument("case " + c.name + ": a timed separable case draws random vectors");
    return {labkit::Distribution::uniform, 0, -1.0, 1.0};
  }

  void work_out_expected() {
    expected_separable_kernel<<<unsigned((shape.pixels() + 255) / 256), 256>>>(
        image.drawn(), row_filter.drawn(), col_filter.drawn(), shape, expected_value.data(), expected_tolerance.data());
    CUDA_CHECK_KERNELS(nullptr);
  }

  Shape shape;
  labkit::FreshInput<float> image, row_filter, col_filter;
  DeviceBuffer<float> temp;
  labkit::TimedOutput<float> out;
  DeviceBuffer<float> expected_value, expected_tolerance;
};

labkit::PerfSubject separable_subject(labkit::Function<decltype(conv2d_separable)> fn, SeparablePerfBuffers& b) {
  return {labkit::timed_call([fn, &b](cudaStream_t stream) {
                               const Shape& s = b.shape;
                               fn(b.image.data(), s.rows, s.cols, b.row_filter.data(), b.col_filter.data(),
                                  s.filter_size, b.temp.data(), b.out.data(), stream);
                             },
                             {&b.image, &b.row_filter, &b.col_filter}, {&b.out}),
          [&b] {
            b.work_out_expected();
            return check_performance_output(b.shape, b.expected_value, b.expected_tolerance, b.out);
          }};
}

// The least a separable filter must move is what a single fused pass moves, as for conv2d: the
// image read once and the output written once, plus the two vectors. A two-pass version also
// writes and reads its intermediate image, twice these bytes.
double separable_bytes_moved(const Shape& s) {
  return 2.0 * sizeof(float) * double(s.pixels()) + 2.0 * sizeof(float) * double(s.filter_size);
}

bool is_separable_case(const Case& c) { return c.has("exercise") && c.params.at("exercise") == "separable"; }
bool is_conv2d_case(const Case& c) { return !is_separable_case(c); }

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("conv2d matches a double-precision CPU cross-correlation with zero padding") {
    labkit::for_each_correctness_case([](const Case& c) { check_conv2d(c); }, is_conv2d_case);
  }
  TEST_CASE("conv2d_separable matches the same cross-correlation with the outer product of its vectors") {
    labkit::for_each_correctness_case([](const Case& c) { check_separable(c); }, is_separable_case);
  }
}

TEST_SUITE("performance") {
  TEST_CASE("conv2d throughput against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      const Shape s = shape_of(c);
      PerfBuffers buffers(c, s);
      labkit::measure_performance(c, conv2d_work(s),
                                  perf_subject(labkit::student<decltype(conv2d)>("conv2d"), buffers),
                                  perf_subject(labkit::reference<decltype(conv2d)>("conv2d"), buffers),
                                  image_copy(buffers.image, buffers.out));
    }, is_conv2d_case);
  }
  TEST_CASE("conv2d_separable throughput against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      const Shape s = shape_of(c);
      SeparablePerfBuffers buffers(c, s);
      labkit::measure_performance(
          c, separable_bytes_moved(s),
          separable_subject(labkit::student<decltype(conv2d_separable)>("conv2d_separable"), buffers),
          separable_subject(labkit::reference<decltype(conv2d_separable)>("conv2d_separable"), buffers),
          image_copy(buffers.image, buffers.out));
    }, is_separable_case);
  }
}
