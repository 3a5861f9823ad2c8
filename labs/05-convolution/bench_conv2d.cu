// Lab 05 benchmark: the reference solution beside the chapter's three kernels (v1: global
// memory, v2: filter in constant memory, v3: shared-memory tile with halo) and a device-to-device
// cudaMemcpy of the same bytes, the roofline anchor: a filter that reads every pixel once and
// writes it once can go no faster than a copy. Times, GB/s (2 x rows x cols x 4 bytes + the
// filter, over the time) and % of the measured read bandwidth, side by side, at the shapes of
// datasets/05-convolution.yaml's performance and benchmark cases. From 5 x 5 on, the
// reference's rolling-sums kernels follow under candidate tunings (labelled "candidate:",
// described below), so that one run shows whether another would beat the reference's. The
// 2-D rows also give TFLOP/s (2 x filter_size^2 x rows x cols over the time) and its % of the
// FP32 peak (SMs x FP32 lanes x 2 x the highest SM clock, labkit::DeviceInfo::peak_fp32_gflops:
// the grader's figure): the larger filters are bound by their FMAs, not by memory. Not a test: it prints numbers for
// people to read. Each kernel's output is compared with the reference's.
//
// Then conv2d_separable: the reference (one fused pass), the chapter's two passes through
// d_temp each from a shared-memory tile (grading/policy/chapter/), the starter's two passes
// straight from global memory (with its column pass given the column vector), the 2-D
// reference conv2d with the outer product of the two vectors as its filter, and the copy. GB/s
// counts the same one read and one write of each pixel, though a two-pass version moves twice
// that.
#include "conv2d.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

// The reference's kernels, for the candidates below: the benchmark takes conv2d and
// conv2d_separable themselves from the reference it links, so this copy leaves them out.
#define LAB05_KERNELS_ONLY
#include "../../solutions/05-convolution/conv2d.cu"

namespace {

using labkit::DeviceBuffer;
constexpr int chapter_block_dim = 16;  // the chapter's BLOCK_DIM

__constant__ float c_chapter_filter[MAX_FILTER_SIZE * MAX_FILTER_SIZE];
__constant__ float c_chapter_row_filter[MAX_FILTER_SIZE];
__constant__ float c_chapter_col_filter[MAX_FILTER_SIZE];

// The chapter's kernels, as it writes them except for two changes so that their output can be
// compared with the reference's: zero padding at the borders (v1 clamps to the edge in the
// chapter) and a bounds check on the write (the chapter has none).

// v1: every thread reads its whole window and the filter from global memory.
__global__ void chapter_v1_global_memory_kernel(float* out, const float* in, const float* filter, int rows, int cols,
                                                int filter_size) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  const int half = filter_size / 2;
  float result = 0.f;
  for (int fr = -half; fr <= half; ++fr)
    for (int fc = -half; fc <= half; ++fc) {
      const int y = row + fr, x = col + fc;
      const float value = (y >= 0 && y < rows && x >= 0 && x < cols) ? in[size_t(y) * cols + x] : 0.f;
      result += value * filter[(fr + half) * filter_size + fc + half];
    }
  if (row < rows && col < cols) out[size_t(row) * cols + col] = result;
}

// v2: the same, with the filter in constant memory (one broadcast read per warp per tap).
__global__ void chapter_v2_constant_filter_kernel(float* out, const float* in, int rows, int cols, int filter_size) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  const int half = filter_size / 2;
  float result = 0.f;
  for (int fr = -half; fr <= half; ++fr)
    for (int fc = -half; fc <= half; ++fc) {
      const int y = row + fr, x = col + fc;
      const float value = (y >= 0 && y < rows && x >= 0 && x < cols) ? in[size_t(y) * cols + x] : 0.f;
      result += value * c_chapter_filter[(fr + half) * filter_size + fc + half];
    }
  if (row < rows && col < cols) out[size_t(row) * cols + col] = result;
}

// v3: the block first copies its (16 + 2 half)^2 input tile, halo included, into shared memory.
__global__ void chapter_v3_shared_tile_kernel(float* out, const float* in, int rows, int cols, int filter_size) {
  extern __shared__ float s_input[];
  const int idx_x = blockDim.x * blockIdx.x + threadIdx.x;
  const int idx_y = blockDim.y * blockIdx.y + threadIdx.y;
  const int pad_size = filter_size / 2;
  const int tile_size = chapter_block_dim + 2 * pad_size;

  for (int row = 0; row <= tile_size / chapter_block_dim; row++)
    for (int col = 0; col <= tile_size / chapter_block_dim; col++) {
      const int idx_row = idx_y + chapter_block_dim * row - pad_size;
      const int idx_col = idx_x + chapter_block_dim * col - pad_size;
      const int fid_row = threadIdx.y + chapter_block_dim * row;
      const int fid_col = threadIdx.x + chapter_block_dim * col;
      if (fid_row >= tile_size || fid_col >= tile_size) continue;
      s_input[tile_size * fid_row + fid_col] =
          (idx_row >= 0 && idx_row < rows && idx_col >= 0 && idx_col < cols) ? in[size_t(idx_row) * cols + idx_col]
                                                                              : 0.f;
    }
  __syncthreads();

  float result = 0.f;
  for (int fr = -pad_size; fr <= pad_size; ++fr)
    for (int fc = -pad_size; fc <= pad_size; ++fc) {
      const int image_row = threadIdx.y + pad_size + fr;
      const int image_col = threadIdx.x + pad_size + fc;
      result += s_input[tile_size * image_row + image_col] *
                c_chapter_filter[(fr + pad_size) * filter_size + fc + pad_size];
    }
  if (idx_y < rows && idx_x < cols) out[size_t(idx_y) * cols + idx_x] = result;
}

// ---- separable: two passes through an intermediate image ----

// The starter's passes, one thread per pixel reading its taps from global memory.
__global__ void naive_row_pass_kernel(const float* in, int rows, int cols, const float* row_filter, int filter_size,
                                      float* temp) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  if (row >= rows || col >= cols) return;
  const int half = filter_size / 2;
  float result = 0.f;
  for (int tap = -half; tap <= half; ++tap)
    if (col + tap >= 0 && col + tap < cols) result += in[size_t(row) * cols + col + tap] * row_filter[tap + half];
  temp[size_t(row) * cols + col] = result;
}

__global__ void naive_column_pass_kernel(const float* temp, int rows, int cols, const float* col_filter,
                                         int filter_size, float* out) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  if (row >= rows || col >= cols) return;
  const int half = filter_size / 2;
  float result = 0.f;
  for (int tap = -half; tap <= half; ++tap)
    if (row + tap >= 0 && row + tap < rows) result += temp[size_t(row + tap) * cols + col] * col_filter[tap + half];
  out[size_t(row) * cols + col] = result;
}

// The chapter tier's passes: a 16 x (16 + 2h) tile of the image for the row pass, a
// (16 + 2h) x 16 tile of the intermediate image for the column pass, the vectors in constant
// memory.
__global__ void chapter_row_pass_tile_kernel(const float* in, int rows, int cols, int filter_size, float* temp) {
  extern __shared__ float s_rows[];
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  const int half = filter_size / 2;
  const int tile_cols = chapter_block_dim + 2 * half;
  for (int tile_col = threadIdx.x; tile_col < tile_cols; tile_col += chapter_block_dim) {
    const int image_col = blockDim.x * blockIdx.x + tile_col - half;
    const bool inside = row < rows && image_col >= 0 && image_col < cols;
    s_rows[tile_cols * threadIdx.y + tile_col] = inside ? in[size_t(row) * cols + image_col] : 0.f;
  }
  __syncthreads();
  float result = 0.f;
  for (int tap = 0; tap < filter_size; ++tap)
    result += s_rows[tile_cols * threadIdx.y + threadIdx.x + tap] * c_chapter_row_filter[tap];
  if (row < rows && col < cols) temp[size_t(row) * cols + col] = result;
}

__global__ void chapter_column_pass_tile_kernel(const float* temp, int rows, int cols, int filter_size, float* out) {
  extern __shared__ float s_cols[];
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  const int half = filter_size / 2;
  const int tile_rows = chapter_block_dim + 2 * half;
  for (int tile_row = threadIdx.y; tile_row < tile_rows; tile_row += chapter_block_dim) {
    const int image_row = blockDim.y * blockIdx.y + tile_row - half;
    const bool inside = col < cols && image_row >= 0 && image_row < rows;
    s_cols[chapter_block_dim * tile_row + threadIdx.x] = inside ? temp[size_t(image_row) * cols + col] : 0.f;
  }
  __syncthreads();
  float result = 0.f;
  for (int tap = 0; tap < filter_size; ++tap)
    result += s_cols[chapter_block_dim * (threadIdx.y + tap) + threadIdx.x] * c_chapter_col_filter[tap];
  if (row < rows && col < cols) out[size_t(row) * cols + col] = result;
}

// ---- candidates: the reference's rolling-sums kernel under other tunings ----
//
// The reference's own kernels (compiled into this file above, their knobs a template parameter:
// rolling::Tuning), under the tunings the reference chose between. Each row names its columns
// per lane and input rows per step; the reference runs the first at 9 x 9 and the second at
// 15 x 15 (rolling::TuningFor), so those rows repeat it in the same run. The others: the
// coefficients from shared memory instead of constant memory, every row of the image through
// the whole body (without it, a chunk's first and last filter_size - 1 input rows skip the
// sums of output rows outside it), and twice the chunks. See the reference for how the
// kernels work.
namespace candidate {

using rolling::Coefficients;

template <int columns, int rows>
struct Shape : rolling::Tuning {
  static constexpr int cols_per_lane = columns;
  static constexpr int rows_per_step = rows;
};
using EightColumnsOneRow = Shape<8, 1>;
using FourColumnsTwoRows = Shape<4, 2>;
using EightColumnsTwoRows = Shape<8, 2>;
using FourColumnsOneRow = Shape<4, 1>;
struct SharedCoefficients : EightColumnsOneRow {
  static constexpr Coefficients coefficients = Coefficients::shared_memory;
};
struct FullBodyEveryRow : FourColumnsTwoRows {
  static constexpr bool skip_outside_sums = false;
};
struct TwoWaves : FourColumnsTwoRows {
  static constexpr int waves = 2;
};

using Launch = void (*)(const float*, int, int, const float*, float*, cudaStream_t);

// The filter sizes the dataset times from 5 x 5 on; nullptr for the others.
template <class T>
Launch for_filter_size(int filter_size) {
  switch (filter_size) {
    case 5: return rolling::launch_rolling<T, 5>;
    case 9: return rolling::launch_rolling<T, 9>;
    case 15: return rolling::launch_rolling<T, 15>;
  }
  return nullptr;
}

struct Tuning {
  const char* name;
  Launch (*launch_for)(int filter_size);
};

const Tuning tunings[] = {
    {"candidate: 8 cols, 1 row/step", for_filter_size<EightColumnsOneRow>},
    {"candidate: 4 cols, 2 rows/step", for_filter_size<FourColumnsTwoRows>},
    {"candidate: 8 cols, 2 rows/step", for_filter_size<EightColumnsTwoRows>},
    {"candidate: 4 cols, 1 row/step", for_filter_size<FourColumnsOneRow>},
    {"candidate: 8, 1, shared coefs", for_filter_size<SharedCoefficients>},
    {"candidate: 4, 2, full body", for_filter_size<FullBodyEveryRow>},
    {"candidate: 4, 2, 2 waves", for_filter_size<TwoWaves>},
};

}  // namespace candidate

struct Problem {
  int rows, cols, filter_size;
  size_t pixels() const { return size_t(rows) * cols; }
  double bytes_moved() const { return 2.0 * sizeof(float) * double(pixels()) + sizeof(float) * filter_size * filter_size; }
  double flops() const { return 2.0 * filter_size * filter_size * double(pixels()); }  // one FMA per tap and pixel
};

// A case's image is `n` columns by `rows`, under an odd filter of filter_size x filter_size.
Problem problem_of(const labkit::Case& c) {
  return {int(c.integer("rows")), int(c.n), int(c.integer("filter_size"))};
}

// A filter's coefficients (or one of a separable filter's vectors): uniform in [-1, 1], from the
// case's seed moved on by `shift` so that the image and each filter differ.
labkit::InputSpec filter_input(const labkit::Case& c, uint64_t shift) {
  return {labkit::Distribution::uniform, c.input.seed + shift, -1, 1};
}

using Run = std::function<void(const float* in, const float* filter, float* out, cudaStream_t stream)>;

struct Variant {
  const char* name;
  Run run;
};

dim3 chapter_grid(const Problem& p) {
  return dim3((p.cols + chapter_block_dim - 1) / chapter_block_dim, (p.rows + chapter_block_dim - 1) / chapter_block_dim);
}

void copy_filter_to_constant(const float* filter, const Problem& p, cudaStream_t stream) {
  cudaMemcpyToSymbolAsync(c_chapter_filter, filter, sizeof(float) * p.filter_size * p.filter_size, 0,
                          cudaMemcpyDeviceToDevice, stream);
}

// The candidates run at the filter sizes they are built for, on 16-byte-aligned rows (cols a
// multiple of 4; cudaMalloc aligns the buffers), where the reference's kernel runs its float4
// loads.
void add_candidates(std::vector<Variant>& rows, const Problem& p) {
  if (p.cols % 4 != 0) return;
  for (const candidate::Tuning& t : candidate::tunings)
    if (const candidate::Launch launch = t.launch_for(p.filter_size))
      rows.push_back({t.name, [p, launch](const float* in, const float* filter, float* out, cudaStream_t stream) {
                        launch(in, p.rows, p.cols, filter, out, stream);
                      }});
}

std::vector<Variant> variants(const Problem& p) {
  const dim3 block(chapter_block_dim, chapter_block_dim);
  const dim3 grid = chapter_grid(p);
  // The chapter's allocation: (2 filter_size + BLOCK_DIM)^2 floats, more than the tile needs.
  const size_t v3_shared = size_t(2 * p.filter_size + chapter_block_dim) * (2 * p.filter_size + chapter_block_dim) *
                           sizeof(float);
  std::vector<Variant> rows = {
      {"reference solution",
       [p](const float* in, const float* filter, float* out, cudaStream_t stream) {
         conv2d(in, p.rows, p.cols, filter, p.filter_size, out, stream);
       }},
      {"cudaMemcpy D2D (anchor)",
       [p](const float* in, const float*, float* out, cudaStream_t stream) {
         cudaMemcpyAsync(out, in, p.pixels() * sizeof(float), cudaMemcpyDeviceToDevice, stream);
       }},
      {"chapter v3: shared tile",
       [p, grid, block, v3_shared](const float* in, const float* filter, float* out, cudaStream_t stream) {
         copy_filter_to_constant(filter, p, stream);
         chapter_v3_shared_tile_kernel<<<grid, block, v3_shared, stream>>>(out, in, p.rows, p.cols, p.filter_size);
       }},
      {"chapter v2: constant filter",
       [p, grid, block](const float* in, const float* filter, float* out, cudaStream_t stream) {
         copy_filter_to_constant(filter, p, stream);
         chapter_v2_constant_filter_kernel<<<grid, block, 0, stream>>>(out, in, p.rows, p.cols, p.filter_size);
       }},
      {"chapter v1: global memory",
       [p, grid, block](const float* in, const float* filter, float* out, cudaStream_t stream) {
         chapter_v1_global_memory_kernel<<<grid, block, 0, stream>>>(out, in, filter, p.rows, p.cols, p.filter_size);
       }},
  };
  add_candidates(rows, p);
  return rows;
}

// Largest difference from the reference's output. Inputs and filter lie in [-1, 1], so an
// output's FP32 rounding stays below filter_size^2 * filter_size^2 * 2^-24 whatever the order.
bool same_output(const std::vector<float>& expected, const std::vector<float>& actual, const Problem& p) {
  const double taps = double(p.filter_size) * p.filter_size;
  const double bound = 2 * taps * taps * 0x1.0p-24;
  for (size_t i = 0; i < expected.size(); ++i)
    if (!(std::fabs(double(actual[i]) - double(expected[i])) <= bound)) return false;
  return true;
}


// One row of the table: time, GB/s, % of the measured read bandwidth, with `flops` (the 2-D
// rows) TFLOP/s and % of the FP32 peak, and the ratio to the first row.
void print_row(const char* label, const char* name, const labkit::TimingStats& t, double bytes, double peak_gbps,
               double reference_ms, bool right, double flops = 0) {
  const double gbps = labkit::gigabytes_per_second(bytes, t.ms.median);
  char compute[64] = "";
  if (flops > 0) {
    const double gflops = flops / (t.ms.median * 1e6);
    std::snprintf(compute, sizeof compute, " %6.2f TFLOP/s %5.1f%% of FP32 peak", gflops / 1e3,
                  100 * gflops / labkit::current_device().peak_fp32_gflops);
  }
  std::printf("%-18s %-31s %9.4f ms %8.1f GB/s %6.1f%% of peak%s  ratio %5.2f  (%zu samples, +-%.2f%%)%s\n", label,
              name, t.ms.median, gbps, 100 * gbps / peak_gbps, compute, reference_ms / t.ms.median, t.ms.count,
              100 * t.ms.relative_error, right ? "" : "  WRONG OUTPUT");
}

void bench_problem(const labkit::Case& c, double peak_gbps) {
  const Problem p = problem_of(c);
  const auto host_in = labkit::generate<float>(p.pixels(), c.input);
  const auto host_filter = labkit::generate<float>(size_t(p.filter_size) * p.filter_size, filter_input(c, 1));
  DeviceBuffer<float> in(host_in), filter(host_filter), out(p.pixels());

  std::vector<float> reference_output;
  double reference_ms = 0;
  for (const Variant& v : variants(p)) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(in.data(), filter.data(), out.data(), stream); },
         [&](int) { out.poison(); }});
    const std::vector<float> output = out.download();
    if (reference_output.empty()) {
      reference_output = output;
      reference_ms = t.ms.median;
    }
    const bool is_copy = std::string(v.name).find("cudaMemcpy") != std::string::npos;
    const bool right = is_copy ? output == host_in : same_output(reference_output, output, p);
    // The copy does no arithmetic: its row shows bandwidth only.
    print_row(c.name.c_str(), v.name, t, p.bytes_moved(), peak_gbps, reference_ms, right, is_copy ? 0 : p.flops());
  }
}

// ---- the separable rows ----

struct SeparableBuffers {
  const float* in;
  const float* row_filter;
  const float* col_filter;
  const float* outer_filter;  // col[i] * row[j], rounded to float: the 2-D reference's filter
  float* temp;
  float* out;
};

using SeparableRun = std::function<void(const SeparableBuffers& b, cudaStream_t stream)>;

struct SeparableVariant {
  const char* name;
  SeparableRun run;
};

std::vector<SeparableVariant> separable_variants(const Problem& p) {
  const dim3 block(chapter_block_dim, chapter_block_dim);
  const dim3 grid = chapter_grid(p);
  const size_t tile_bytes = sizeof(float) * chapter_block_dim * (chapter_block_dim + 2 * (p.filter_size / 2));
  return {
      {"reference: fused, one pass",
       [p](const SeparableBuffers& b, cudaStream_t stream) {
         conv2d_separable(b.in, p.rows, p.cols, b.row_filter, b.col_filter, p.filter_size, b.temp, b.out, stream);
       }},
      {"cudaMemcpy D2D (anchor)",
       [p](const SeparableBuffers& b, cudaStream_t stream) {
         cudaMemcpyAsync(b.out, b.in, p.pixels() * sizeof(float), cudaMemcpyDeviceToDevice, stream);
       }},
      {"2-D reference, outer product",
       [p](const SeparableBuffers& b, cudaStream_t stream) {
         conv2d(b.in, p.rows, p.cols, b.outer_filter, p.filter_size, b.out, stream);
       }},
      {"chapter: 2 passes, tiles",
       [p, grid, block, tile_bytes](const SeparableBuffers& b, cudaStream_t stream) {
         const size_t bytes = sizeof(float) * p.filter_size;
         cudaMemcpyToSymbolAsync(c_chapter_row_filter, b.row_filter, bytes, 0, cudaMemcpyDeviceToDevice, stream);
         cudaMemcpyToSymbolAsync(c_chapter_col_filter, b.col_filter, bytes, 0, cudaMemcpyDeviceToDevice, stream);
         chapter_row_pass_tile_kernel<<<grid, block, tile_bytes, stream>>>(b.in, p.rows, p.cols, p.filter_size, b.temp);
         chapter_column_pass_tile_kernel<<<grid, block, tile_bytes, stream>>>(b.temp, p.rows, p.cols, p.filter_size,
                                                                             b.out);
       }},
      {"naive: 2 passes, global",
       [p, grid, block](const SeparableBuffers& b, cudaStream_t stream) {
         naive_row_pass_kernel<<<grid, block, 0, stream>>>(b.in, p.rows, p.cols, b.row_filter, p.filter_size, b.temp);
         naive_column_pass_kernel<<<grid, block, 0, stream>>>(b.temp, p.rows, p.cols, b.col_filter, p.filter_size,
                                                             b.out);
       }},
  };
}

// Inputs and both vectors lie in [-1, 1], so an output's magnitude stays below filter_size^2 and
// its FP32 rounding, in any order, below (filter_size^2 + 2 filter_size) of those units
// (test_conv2d.cu's separable tolerance); twice that for the difference of two outputs.
bool same_separable_output(const std::vector<float>& expected, const std::vector<float>& actual, const Problem& p) {
  const double taps = double(p.filter_size) * p.filter_size;
  const double bound = 2 * (taps + 2 * p.filter_size) * taps * 0x1.0p-24;
  for (size_t i = 0; i < expected.size(); ++i)
    if (!(std::fabs(double(actual[i]) - double(expected[i])) <= bound)) return false;
  return true;
}

void bench_separable_problem(const labkit::Case& c, double peak_gbps) {
  const Problem p = problem_of(c);
  const auto host_in = labkit::generate<float>(p.pixels(), c.input);
  const auto host_row = labkit::generate<float>(size_t(p.filter_size), filter_input(c, 1));
  const auto host_col = labkit::generate<float>(size_t(p.filter_size), filter_input(c, 2));
  std::vector<float> host_outer;
  for (float c : host_col)
    for (float r : host_row) host_outer.push_back(c * r);
  DeviceBuffer<float> in(host_in), row(host_row), col(host_col), outer(host_outer), temp(p.pixels()), out(p.pixels());
  const SeparableBuffers buffers{in.data(), row.data(), col.data(), outer.data(), temp.data(), out.data()};

  std::vector<float> reference_output;
  double reference_ms = 0;
  for (const SeparableVariant& v : separable_variants(p)) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(buffers, stream); }, [&](int) { out.poison(); }});
    const std::vector<float> output = out.download();
    if (reference_output.empty()) {
      reference_output = output;
      reference_ms = t.ms.median;
    }
    const bool is_copy = std::string(v.name).find("cudaMemcpy") != std::string::npos;
    const bool right = is_copy ? output == host_in : same_separable_output(reference_output, output, p);
    print_row(c.name.c_str(), v.name, t, p.bytes_moved(), peak_gbps, reference_ms, right);
  }
}

bool is_separable(const labkit::Case& c) { return c.has("exercise") && c.params.at("exercise") == "separable"; }

// The 2-D cases, then the separable ones, each smallest filter first: a ladder of filter sizes
// per exercise, whichever of the dataset's lists a size sits in.
std::vector<labkit::Case> in_table_order(std::vector<labkit::Case> cases) {
  std::stable_sort(cases.begin(), cases.end(), [](const labkit::Case& a, const labkit::Case& b) {
    return std::make_pair(is_separable(a), a.integer("filter_size")) <
           std::make_pair(is_separable(b), b.integer("filter_size"));
  });
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = in_table_order(labkit::benchmark_cases(argc, argv));
  const double peak = labkit::start_benchmark(
      " (GB/s = 2 x rows x cols x 4 bytes / time; ratio = reference time / time, as the grader computes it)");
  std::printf("FP32 peak %.1f TFLOP/s (SMs x FP32 lanes x 2 x highest SM clock; an H100 SXM: 132 x 128 x 2 x 1980 MHz "
              "= 66.9). 2-D rows: TFLOP/s = 2 x filter_size^2 x rows x cols / time\n",
              labkit::current_device().peak_fp32_gflops / 1e3);
  for (const labkit::Case& c : cases) {
    if (is_separable(c))
      bench_separable_problem(c, peak);
    else
      bench_problem(c, peak);
  }
  return 0;
}
