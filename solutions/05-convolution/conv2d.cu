// Lab 05 reference solution. Two 2-D kernels, chosen by filter size:
//
// Up to 5 x 5, where the filter is memory-bound, the chapter's v3 (a shared-memory tile with
// its halo) taken three steps further:
//   - each thread computes a column strip of outputs, so every value it reads from shared
//     memory serves up to filter_size outputs (register reuse; the chapter's v3 reads
//     filter_size^2 values from shared memory for every output);
//   - the filter size is a template parameter, so the loops unroll and each coefficient has a
//     fixed register;
//   - the tile is loaded with 16-byte loads when the rows are 16-byte aligned, and each thread
//     loads the filter from d_filter into registers (no copy to constant memory).
// From 7 x 7 on, where the FMAs bind it, no tile: each warp walks down a strip of the image
// with the sums of filter_size output rows in registers, and adds each input row, read once,
// into all of them ("rolling sums" below): nearly all of the loop's instructions are FMAs, and
// near the ends of a warp's rows it skips the sums of output rows that are not its own.
// Every size and every odd filter size up to MAX_FILTER_SIZE is handled; pixels outside the
// image count as zero.
//
// conv2d_separable (below) goes beyond the chapter's two passes: one fused kernel that filters
// each input row in registers as it streams down the image and keeps the column sums in
// registers, so the intermediate image never reaches memory: it runs close to a
// device-to-device copy of the image, several times faster than the 2-D kernel above with the
// outer product as its filter or the chapter's two tiled passes (docs/design/05-convolution.md, with the
// 2-D designs tried for the 5 x 5 filter).
#include "conv2d.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace {

// The filter as the tile kernel reads it: each thread loads it from d_filter into registers,
// with 16-byte loads that every thread of a warp makes at the same address (ptxas reports 32
// registers per thread at 5 x 5, as with constant memory). A copy to constant memory would be
// an operation of its own on the stream, which the kernel must wait for: about 2 us per call,
// 1% of a 5 x 5 filter over 8192 x 8192 (H100).
template <int FilterSize>
struct Filter {
  static_assert(FilterSize <= 5, "the tile kernel serves filters up to 5 x 5: larger ones cost registers");
  static constexpr int count = FilterSize * FilterSize;
  float loaded[count];

  __device__ explicit Filter(const float* __restrict__ filter) {
    if (reinterpret_cast<uintptr_t>(filter) % 16 == 0) {
#pragma unroll
      for (int q = 0; q < count / 4; ++q) {
        const float4 four = __ldg(reinterpret_cast<const float4*>(filter) + q);
        loaded[4 * q] = four.x;
        loaded[4 * q + 1] = four.y;
        loaded[4 * q + 2] = four.z;
        loaded[4 * q + 3] = four.w;
      }
#pragma unroll
      for (int q = count / 4 * 4; q < count; ++q) loaded[q] = __ldg(filter + q);
    } else {
#pragma unroll
      for (int q = 0; q < count; ++q) loaded[q] = __ldg(filter + q);
    }
  }

  __device__ float operator()(int i, int j) const { return loaded[i * FilterSize + j]; }
};

// The block's shape and how much of the output it covers.
struct Tiling {
  static constexpr int threads_x = 32;        // one warp across the tile: conflict-free shared reads
  static constexpr int threads_y = 8;
  static constexpr int threads = threads_x * threads_y;
  static constexpr int cols_per_thread = 2;   // columns lane and lane + 32
  static constexpr int rows_per_thread = 8;   // a strip of consecutive rows
  static constexpr int tile_cols = threads_x * cols_per_thread;
  static constexpr int tile_rows = threads_y * rows_per_thread;
};

// The shared-memory tile for one filter size: the block's outputs plus a halo of
// filter_size / 2 pixels on each side. The halo on the left and right is rounded up to whole
// float4s so that each tile row starts on a 16-byte boundary of the image as well.
template <int FilterSize>
struct Tile {
  static_assert(FilterSize % 2 == 1 && FilterSize <= MAX_FILTER_SIZE, "odd filter sizes up to MAX_FILTER_SIZE");
  static_assert(Tiling::tile_cols % 4 == 0, "tile columns must be whole float4s");
  static constexpr int half = FilterSize / 2;
  static constexpr int left = (half + 3) / 4 * 4;  // columns loaded left (and right) of the outputs
  static constexpr int cols = Tiling::tile_cols + 2 * left;
  static constexpr int rows = Tiling::tile_rows + 2 * half;
  static constexpr int float4s_per_row = cols / 4;
};

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Warps of `kernel` resident on the whole GPU at once, in blocks of `threads`: how many the
// strip kernels' grids may hold before a warp waits for another to finish.
template <class Kernel>
int resident_warps_of(Kernel kernel, int threads, int warps_per_block) {
  int device = 0, sm_count = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
  return std::max(1, sm_count * per_sm * warps_per_block);
}

// A strip kernel's grid: one warp per strip and chunk of rows, `warps_per_block` to a block.
struct Launch {
  int strips, chunks, chunk_rows;
  unsigned blocks;
};

Launch strip_launch(int rows, int strips, int chunk_rows, int warps_per_block) {
  Launch l{strips, ceil_div(rows, chunk_rows), chunk_rows, 0};
  l.blocks = unsigned(ceil_div(l.strips * l.chunks, warps_per_block));
  return l;
}

// N floats as one vector (float2, float4): what a lane loads, stages and stores.
template <int N>
struct Vec;
template <>
struct Vec<2> {
  using type = float2;
};
template <>
struct Vec<4> {
  using type = float4;
};

template <int N>
struct Floats {
  float v[N];
};

// Loads `count` floats of row `y` from column x on; zeros outside the image. With VectorLoads,
// x is a multiple of `count` and cols of 4, so the vector lies wholly inside or outside.
template <bool VectorLoads, int Count>
__device__ Floats<Count> load_floats(const float* __restrict__ row_start, int x, int cols) {
  Floats<Count> f;
  if constexpr (VectorLoads) {
    using V = typename Vec<Count>::type;
    V value{};
    if (x >= 0 && x < cols) value = __ldg(reinterpret_cast<const V*>(row_start + x));
    f = *reinterpret_cast<Floats<Count>*>(&value);
  } else {
#pragma unroll
    for (int c = 0; c < Count; ++c) f.v[c] = (x + c >= 0 && x + c < cols) ? __ldg(row_start + x + c) : 0.f;
  }
  return f;
}


// Copies the image window [first_row, +Tile::rows) x [first_col, +Tile::cols) into `tile`,
// zeros outside the image. With `vector_loads`, cols is a multiple of 4 and `in` is 16-byte
// aligned, and first_col is a multiple of 4: each float4 lies wholly inside or wholly outside.
template <int FilterSize>
__device__ void load_tile(const float* __restrict__ in, int rows, int cols, int first_row, int first_col,
                          bool vector_loads, float (*tile)[Tile<FilterSize>::cols]) {
  using T = Tile<FilterSize>;
  const int thread = threadIdx.y * Tiling::threads_x + threadIdx.x;
  if (vector_loads) {
    constexpr int count = T::rows * T::float4s_per_row;
#pragma unroll
    for (int step = 0; step < ceil_div(count, Tiling::threads); ++step) {
      const int i = thread + step * Tiling::threads;
      if (i >= count) break;
      const int r = i / T::float4s_per_row, q = i % T::float4s_per_row;
      const int y = first_row + r, x = first_col + 4 * q;
      float4 value = make_float4(0.f, 0.f, 0.f, 0.f);
      if (y >= 0 && y < rows && x >= 0 && x < cols)
        value = __ldg(reinterpret_cast<const float4*>(in + size_t(y) * cols + x));
      *reinterpret_cast<float4*>(&tile[r][4 * q]) = value;
    }
  } else {
    constexpr int count = T::rows * T::cols;
    for (int i = thread; i < count; i += Tiling::threads) {
      const int r = i / T::cols, c = i % T::cols;
      const int y = first_row + r, x = first_col + c;
      tile[r][c] = (y >= 0 && y < rows && x >= 0 && x < cols) ? __ldg(in + size_t(y) * cols + x) : 0.f;
    }
  }
}

// One block computes a tile_rows x tile_cols patch of the output. Blocks are numbered along
// rows of tiles in a one-dimensional grid, so neither a very tall nor a very wide image runs
// into gridDim.y's limit of 65535.
template <int FilterSize>
__global__ void __launch_bounds__(Tiling::threads)
conv2d_tiled_register_strip_kernel(const float* __restrict__ in, int rows, int cols, int tiles_x, bool vector_loads,
                                   const float* __restrict__ d_filter, float* __restrict__ out) {
  using T = Tile<FilterSize>;
  const Filter<FilterSize> filter(d_filter);
  constexpr int R = Tiling::rows_per_thread;
  __shared__ __align__(16) float tile[T::rows][T::cols];

  const int tile_x = int(blockIdx.x % unsigned(tiles_x)), tile_y = int(blockIdx.x / unsigned(tiles_x));
  const int out_row0 = tile_y * Tiling::tile_rows, out_col0 = tile_x * Tiling::tile_cols;
  load_tile<FilterSize>(in, rows, cols, out_row0 - T::half, out_col0 - T::left, vector_loads, tile);
  __syncthreads();

  // Thread (tx, ty) owns output rows ty*R .. ty*R+R-1 of the tile, in columns tx and tx + 32.
  // Input row ir of its window feeds output row o through filter row ir - o, so each value
  // read from shared memory is used by up to FilterSize accumulators.
  float acc[Tiling::cols_per_thread][R];
#pragma unroll
  for (int k = 0; k < Tiling::cols_per_thread; ++k)
#pragma unroll
    for (int o = 0; o < R; ++o) acc[k][o] = 0.f;

  const int first_tile_col = threadIdx.x + T::left - T::half;
#pragma unroll
  for (int ir = 0; ir < R + FilterSize - 1; ++ir) {
    const float* tile_row = &tile[threadIdx.y * R + ir][first_tile_col];
#pragma unroll
    for (int j = 0; j < FilterSize; ++j) {
#pragma unroll
      for (int k = 0; k < Tiling::cols_per_thread; ++k) {
        const float value = tile_row[k * Tiling::threads_x + j];
#pragma unroll
        for (int i = 0; i < FilterSize; ++i) {
          const int o = ir - i;  // known at compile time: the test costs nothing
          if (o >= 0 && o < R) acc[k][o] = fmaf(value, filter(i, j), acc[k][o]);
        }
      }
    }
  }

#pragma unroll
  for (int o = 0; o < R; ++o) {
    const int row = out_row0 + threadIdx.y * R + o;
#pragma unroll
    for (int k = 0; k < Tiling::cols_per_thread; ++k) {
      const int col = out_col0 + threadIdx.x + k * Tiling::threads_x;
      if (row < rows && col < cols) out[size_t(row) * cols + col] = acc[k][o];
    }
  }
}

template <int FilterSize>
void launch_tiled(const float* in, int rows, int cols, const float* filter, float* out, cudaStream_t stream) {
  const int tiles_x = ceil_div(cols, Tiling::tile_cols);
  const int tiles_y = ceil_div(rows, Tiling::tile_rows);
  const bool vector_loads = cols % 4 == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0;
  const unsigned blocks = unsigned(tiles_x) * unsigned(tiles_y);
  conv2d_tiled_register_strip_kernel<FilterSize>
      <<<blocks, dim3(Tiling::threads_x, Tiling::threads_y), 0, stream>>>(in, rows, cols, tiles_x, vector_loads, filter, out);
}

// ---- filters from 7 x 7: sums that roll down the image ------------------------------------
//
// From 7 x 7 on the tile kernel is bound by its instructions, not by memory: its FMAs share
// the issue slots with one shared-memory load per filter_size FMAs, and its fully unrolled
// body (up to 78 KB of code at 15 x 15) streams through the instruction cache. This kernel
// gives each FMA more company of its own kind. Each warp owns a strip of 32 x cols_per_lane
// columns and walks down a chunk of its rows, as the fused separable kernel does. A lane loads
// each input row once, as whole float4s (its columns and the halo on either side; L1 serves
// the overlap between neighbouring lanes), and adds it into the filter_size output rows it
// feeds: filter row i's taps go into the sum of output row y + half - i. Those sums stay in
// registers; after each input row the oldest is complete, is stored, and the others move down
// one place, a move that ptxas folds into each sum's first FMA.
//
// The coefficients are copied into constant memory (c_taps) before the kernel, one copy per
// call on the stream, and each FMA reads its coefficient from a uniform register that ptxas
// fills from there (ULDC.64, two coefficients at a time, some kept across rows). An FMA then
// reads only two operands from the register file, the window's value and the sum, which
// ptxas places in different banks: none of the loop's FMAs waits on a bank conflict. With
// the coefficients in ordinary registers (from shared memory as float4s, the other tuning the
// benchmark times) a third of the FMAs read three operands from two banks, and the profiler
// counts the conflicts as dispatch stalls.
//
// Two forms of the loop, chosen by filter size (rolling::TuningFor):
//   - Up to 9 x 9, one input row per step and 8 columns per lane: the window of the row ahead
//     is loaded into registers while the FMAs of the current row run.
//   - From 11 x 11, two input rows per step and 4 columns per lane
//     (conv2d_rolling_pairs_kernel): each coefficient, loaded once, feeds both rows' FMAs, and
//     the rows arrive through a ring of shared-memory slots that cp.async fills three rows
//     ahead, so no instruction copies a window. Half the columns halve the sums: 154 registers
//     at 15 x 15, 3 blocks per SM instead of 2, so each scheduler has 3 warps to cover the
//     waits on loads and on instruction fetches (the profile at 15 x 15 in
//     docs/design/05-convolution.md: issue slots busy 76% with one row per step and 8 columns,
//     waiting mostly on the window's loads).
//
// The rest of the loop is kept off the path that nearly every row takes:
//   - A chunk's first and last filter_size - 1 input rows also feed output rows outside it.
//     They run a second copy of the body that skips those sums, a branch per filter row, so
//     no FMA goes to a sum that is never stored (a chunk of a few hundred rows would otherwise
//     spend filter_size - 1 rows' worth of FMAs on them, 5% at 15 x 15 and 8192 x 8192), and
//     the rows between run the body with no test in it. Chunks then cost only the reads of
//     their vertical halo.
//   - A row outside the image is never loaded: the second copy adds zeros in its place, and
//     the inner rows all lie in the image. The window's floats outside the image's columns
//     are zeroed once, before the loop, and no load writes them: no instruction zeroes
//     padding row by row.
//   - Which float4s of a lane's window lie in the image is decided once: each load is one
//     predicated LDG (or cp.async).
// docs/design/05-convolution.md counts ptxas's instructions on the inner path and has the
// profiles.

namespace rolling {

// Where the kernel reads the filter's coefficients.
enum class Coefficients {
  constant_bank,  // copied into c_taps before the kernel; each FMA reads one from a uniform register
  shared_memory,  // loaded by each block into shared memory, then as float4s into registers
};

// The knobs for 7 x 7 and 9 x 9, measured against the alternatives the benchmark times beside
// the reference (its "candidate:" rows): 8 columns per lane (4 warps per block: one per
// scheduler), one row per step, 128 registers at 9 x 9, 4 blocks per SM.
struct Tuning {
  static constexpr int warps_per_block = 4;
  static constexpr int cols_per_lane = 8;   // two float4s per lane: each warp stores 1 KiB of whole lines per row
  static constexpr int rows_ahead = 1;      // one row per step: rows a lane has loaded beyond the one it adds
  static constexpr Coefficients coefficients = Coefficients::constant_bank;
  static constexpr bool skip_outside_sums = true;  // a chunk's first and last rows skip sums outside it
  static constexpr int waves = 1;           // chunks sized so that every warp of the grid is resident at once
  static constexpr int rows_per_step = 1;   // input rows added per step of the inner loop (1 or 2)
};

// From 11 x 11: two rows per step over 4 columns per lane (at 9 x 9 it is slower: the one-row
// loop already runs 4 blocks per SM there, and its body is a third of the size). Measured at
// 15 x 15 on an H100: 0.627 ms, 72% of the FP32 peak, against 0.680 ms with Tuning. The same
// with skip_outside_sums off measured faster in that run (0.606 ms): the next candidate
// (docs/design/05-convolution.md).
struct WideTuning : Tuning {
  static constexpr int cols_per_lane = 4;   // one float4 per lane
  static constexpr int rows_per_step = 2;
};

template <int FilterSize>
using TuningFor = std::conditional_t<(FilterSize >= 11), WideTuning, Tuning>;

// The filter for the constant-bank tuning, row-major and dense: coefficient (i, j) of a
// K x K filter is c_taps[i * K + j], an address known at compile time. One copy for the
// module: two calls running at once on different streams would overwrite each other's
// filter (the lab's calls come one after another, as the README's Step 1 says).
__constant__ float c_taps[MAX_FILTER_SIZE * MAX_FILTER_SIZE];

template <class T, int FilterSize>
struct Geometry {
  static_assert(FilterSize % 2 == 1 && FilterSize <= MAX_FILTER_SIZE, "odd filter sizes up to MAX_FILTER_SIZE");
  static_assert(T::cols_per_lane % 4 == 0, "a lane's columns are whole float4s");
  static constexpr int filter_size = FilterSize;
  static constexpr int threads = 32 * T::warps_per_block;
  static constexpr int lane_cols = T::cols_per_lane;
  static constexpr int half = FilterSize / 2;
  static constexpr int strip_cols = 32 * lane_cols;
  static constexpr int halo = (half + 3) / 4 * 4;                // columns loaded on each side, whole float4s
  static constexpr int window_vectors = (2 * halo + lane_cols) / 4;
  static constexpr int window_floats = 4 * window_vectors;
  static constexpr int window_offset = halo - half;              // the first column a lane's sums need
  static constexpr int padded_cols = (FilterSize + 3) / 4 * 4;   // a filter row in shared memory, whole float4s
};

// A lane's window of one input row: columns [x0, x0 + window_floats).
template <class G>
using Window = Floats<G::window_floats>;

// Loads a row's window into `w`: the floats from in[first] on, where first is the index of the
// row's column x0. Only the floats that lie in the image's columns are
// written: the others were zeroed before the first row and stay zero, so no instruction of the
// loop zeroes the left and right padding. `inside` says that the whole window lies in the
// image's columns, as it does for every lane but those at the left and right edges.
template <class G, bool VectorLoads>
__device__ void load_window(const float* __restrict__ in, ptrdiff_t first, int x0, int cols, bool inside,
                            Window<G>& w) {
#pragma unroll
  for (int q = 0; q < G::window_vectors; ++q) {
    const int x = x0 + 4 * q;
    if constexpr (VectorLoads) {
      if (inside || (x >= 0 && x < cols))
        *reinterpret_cast<float4*>(&w.v[4 * q]) = __ldg(reinterpret_cast<const float4*>(in + (first + 4 * q)));
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c)
        if (inside || (x + c >= 0 && x + c < cols)) w.v[4 * q + c] = __ldg(in + (first + 4 * q + c));
    }
  }
}

// Adds an input row through filter row K - 1 - m into the sum of the output row that m
// places below its top (m = 0: the oldest sum, K - 1: the newest). The sum moves down one
// place as its first FMA reads it: sums[m] starts from sums[m + 1] (not yet updated, m
// ascending), and the newest output row from zero. m is a constant once the loops unroll.
template <class T, class G>
__device__ __forceinline__ void add_through_filter_row(int m, const Window<G>& w,
                                                       const float (*filter)[G::padded_cols],
                                                       float (&sums)[G::filter_size][G::lane_cols]) {
  constexpr int K = G::filter_size, C = G::lane_cols, P = G::padded_cols;
  float coef[K];
  if constexpr (T::coefficients == Coefficients::constant_bank) {
#pragma unroll
    for (int j = 0; j < K; ++j) coef[j] = c_taps[(K - 1 - m) * K + j];
  } else {
    float padded[P];
#pragma unroll
    for (int q = 0; q < P / 4; ++q)
      *reinterpret_cast<float4*>(&padded[4 * q]) = *reinterpret_cast<const float4*>(&filter[K - 1 - m][4 * q]);
#pragma unroll
    for (int j = 0; j < K; ++j) coef[j] = padded[j];
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    float s = m + 1 < K ? sums[m + 1][c] : 0.f;
#pragma unroll
    for (int j = 0; j < K; ++j) s = fmaf(w.v[G::window_offset + c + j], coef[j], s);
    sums[m][c] = s;
  }
}

// One warp per (strip, chunk) unit, numbered strip first, so that the warps of a block and of
// neighbouring blocks work on neighbouring strips of the same rows.
template <class T, int FilterSize, bool VectorLoads>
__global__ void __launch_bounds__(Geometry<T, FilterSize>::threads)
conv2d_rolling_sums_kernel(const float* __restrict__ in, int rows, int cols, int strips, int chunks, int chunk_rows,
                           const float* __restrict__ d_filter, float* __restrict__ out) {
  using G = Geometry<T, FilterSize>;
  constexpr int K = FilterSize, C = G::lane_cols, P = G::padded_cols;
  __shared__ __align__(16) float filter[T::coefficients == Coefficients::shared_memory ? K : 1][P];
  if constexpr (T::coefficients == Coefficients::shared_memory) {
    for (int t = int(threadIdx.x); t < K * P; t += G::threads)
      filter[t / P][t % P] = t % P < K ? __ldg(d_filter + t / P * K + t % P) : 0.f;
    __syncthreads();  // the only one: before any warp leaves
  }

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int unit = int(blockIdx.x) * T::warps_per_block + warp;
  if (unit >= strips * chunks) return;
  const int col0 = (unit % strips) * G::strip_cols + C * lane;  // the lane's first output column
  const int out_row0 = (unit / strips) * chunk_rows;
  const int out_row_end = min(out_row0 + chunk_rows, rows);
  const int x0 = col0 - G::halo;

  // After input row y, sums[m] holds output row y - half + m: filter row K - 1 - m has just
  // been added into it.
  float sums[K][C];
#pragma unroll
  for (int m = 0; m < K; ++m)
#pragma unroll
    for (int c = 0; c < C; ++c) sums[m][c] = 0.f;

  // The next row to load starts at in[next_offset] (its column x0), one row further down after
  // each; a row outside the image is not loaded (the loop adds zeros in its place).
  const bool inside = x0 >= 0 && x0 + G::window_floats <= cols;
  ptrdiff_t next_offset = ptrdiff_t(out_row0 - G::half) * cols + x0;
  Window<G> ahead[T::rows_ahead] = {};  // the padding columns stay zero from here on
#pragma unroll
  for (int a = 0; a < T::rows_ahead; ++a, next_offset += cols) {
    const int y = out_row0 - G::half + a;
    if (y >= 0 && y < rows) load_window<G, VectorLoads>(in, next_offset, x0, cols, inside, ahead[a]);
  }

  // Input row y feeds output rows y - half .. y + half. Where all of them lie in the chunk
  // (y in [full_begin, full_end): all but its first and last filter_size - 1 input rows),
  // every FMA counts. Near the chunk's ends the sums of rows outside it are skipped, a branch
  // per filter row that the whole warp takes alike.
  const int full_begin = T::skip_outside_sums ? out_row0 + G::half : max(out_row0 - G::half, 0);
  const int full_end = T::skip_outside_sums ? out_row_end - G::half : min(out_row_end + G::half, rows);

  // One input row per iteration: the body stays small enough for the instruction cache.
#pragma unroll 1
  for (int y = out_row0 - G::half; y < out_row_end + G::half; ++y) {
    const Window<G> w = ahead[0];
#pragma unroll
    for (int a = 0; a + 1 < T::rows_ahead; ++a) ahead[a] = ahead[a + 1];
    if (y + T::rows_ahead >= 0 && y + T::rows_ahead < rows)
      load_window<G, VectorLoads>(in, next_offset, x0, cols, inside, ahead[T::rows_ahead - 1]);
    next_offset += cols;

    if (y >= full_begin && y < full_end) {
#pragma unroll
      for (int m = 0; m < K; ++m) add_through_filter_row<T, G>(m, w, filter, sums);
    } else {
      // sums[m] is output row y - half + m: kept only from out_row0 to out_row_end - 1. A row
      // outside the image (never loaded) adds zeros.
      Window<G> row = w;
      if (y < 0 || y >= rows)
#pragma unroll
        for (int i = 0; i < G::window_floats; ++i) row.v[i] = 0.f;
      const int m_begin = out_row0 - (y - G::half), m_end = out_row_end - (y - G::half);
#pragma unroll
      for (int m = 0; m < K; ++m)
        if (m >= m_begin && m < m_end) add_through_filter_row<T, G>(m, row, filter, sums);
    }

    const int out_row = y - G::half;  // complete: its last input row, y, is in
    if (out_row >= out_row0) {
      float* row_start = out + size_t(out_row) * cols;
#pragma unroll
      for (int q = 0; q < C / 4; ++q) {
        const int x = col0 + 4 * q;
        if constexpr (VectorLoads) {
          if (x < cols)
            *reinterpret_cast<float4*>(row_start + x) =
                make_float4(sums[0][4 * q], sums[0][4 * q + 1], sums[0][4 * q + 2], sums[0][4 * q + 3]);
        } else {
#pragma unroll
          for (int c = 0; c < 4; ++c)
            if (x + c < cols) row_start[x + c] = sums[0][4 * q + c];
        }
      }
    }
  }
}

// ---- two input rows per step ----
//
// The kernel above adds one input row per step: each coefficient, loaded into a uniform
// register, feeds cols_per_lane FMAs, and the row loaded ahead is copied into place. This one
// adds two rows per step, coefficient by coefficient, so that each coefficient feeds twice the
// FMAs, and the rows come through a ring of four slots of shared memory per warp, filled by
// cp.async three rows ahead, so that no instruction copies a window. The first and last
// filter_size - 1 rows of a chunk go one at a time through the body that skips the sums
// outside the chunk, as in the kernel above.

// cp.async from sm_80 on; before that (sm_75) a plain copy through registers, complete before
// the next instruction, so that the waits have nothing to wait for.
__device__ __forceinline__ void copy_async_16(float4* to_shared, const float* from_global) {
#if __CUDA_ARCH__ >= 800
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(to_shared));
  // .ca: through L1, where the three lanes that share each float4 of the image find it.
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(from_global) : "memory");
#else
  *to_shared = __ldg(reinterpret_cast<const float4*>(from_global));
#endif
}

__device__ __forceinline__ void commit_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int Pending>
__device__ __forceinline__ void wait_for_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

// A lane's part of one slot: its window's float4s, lanes side by side (conflict-free).
template <class G>
using Slot = float4[G::window_vectors][32];

// Starts copying row y's window into `slot` (its float4s inside the image; the others stay
// zero), as one group of copies; a row outside [0, rows) or past the chunk is not copied, and
// its group is empty, so that every step waits for the same number of groups.
template <class G>
__device__ void stage_row(Slot<G>& slot, const float* row, bool wanted, int x0, int cols, bool inside, int lane) {
  if (wanted) {
#pragma unroll
    for (int q = 0; q < G::window_vectors; ++q) {
      const int x = x0 + 4 * q;
      if (inside || (x >= 0 && x < cols)) copy_async_16(&slot[q][lane], row + 4 * q);
    }
  }
  commit_copies();
}

template <class G>
__device__ Window<G> read_row(const Slot<G>& slot, int lane) {
  Window<G> w;
#pragma unroll
  for (int q = 0; q < G::window_vectors; ++q) *reinterpret_cast<float4*>(&w.v[4 * q]) = slot[q][lane];
  return w;
}

// Adds input rows y (window a) and y + 1 (window b) into the sums, coefficient by coefficient.
// Before, sums[m + 1] holds output row y - half + m (as after row y - 1); after, sums[m] holds
// output row y + 1 - half + m (as after row y + 1), and done[0] the completed output row
// y - half (sums[0] is y + 1 - half, also complete).
template <class G>
__device__ __forceinline__ void add_two_rows(const Window<G>& a, const Window<G>& b,
                                             float (&sums)[G::filter_size][G::lane_cols],
                                             float (&done)[G::lane_cols]) {
  constexpr int K = G::filter_size, C = G::lane_cols, O = G::window_offset;
  float t[K + 1][C];  // t[m]: output row y - half + m
#pragma unroll
  for (int m = 0; m <= K; ++m)
#pragma unroll
    for (int c = 0; c < C; ++c) t[m][c] = m + 1 < K ? sums[m + 1][c] : 0.f;
#pragma unroll
  for (int i = 0; i < K; ++i)
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const float f = c_taps[i * K + j];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        t[K - 1 - i][c] = fmaf(a.v[O + c + j], f, t[K - 1 - i][c]);  // row y feeds output y + half - i
        t[K - i][c] = fmaf(b.v[O + c + j], f, t[K - i][c]);          // row y + 1 feeds y + 1 + half - i
      }
    }
#pragma unroll
  for (int c = 0; c < C; ++c) done[c] = t[0][c];
#pragma unroll
  for (int m = 0; m < K; ++m)
#pragma unroll
    for (int c = 0; c < C; ++c) sums[m][c] = t[m + 1][c];
}

template <class G>
__device__ __forceinline__ void store_row(float* __restrict__ out, int cols, int out_row, int col0,
                                          const float (&values)[G::lane_cols]) {
  float* row_start = out + size_t(out_row) * cols;
#pragma unroll
  for (int q = 0; q < G::lane_cols / 4; ++q)
    if (col0 + 4 * q < cols)
      *reinterpret_cast<float4*>(row_start + col0 + 4 * q) =
          make_float4(values[4 * q], values[4 * q + 1], values[4 * q + 2], values[4 * q + 3]);
}

// 16-byte-aligned rows only (the copies are float4s).
template <class T, int FilterSize>
__global__ void __launch_bounds__(Geometry<T, FilterSize>::threads)
conv2d_rolling_pairs_kernel(const float* __restrict__ in, int rows, int cols, int strips, int chunks, int chunk_rows,
                            float* __restrict__ out) {
  using G = Geometry<T, FilterSize>;
  static_assert(T::coefficients == Coefficients::constant_bank, "two rows per step read the constant bank");
  constexpr int K = FilterSize, C = G::lane_cols, V = G::window_vectors;
  __shared__ Slot<G> ring[T::warps_per_block][4];

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int unit = int(blockIdx.x) * T::warps_per_block + warp;
  if (unit >= strips * chunks) return;
  const int col0 = (unit % strips) * G::strip_cols + C * lane;
  const int out_row0 = (unit / strips) * chunk_rows;
  const int out_row_end = min(out_row0 + chunk_rows, rows);
  const int x0 = col0 - G::halo;
  const bool inside = x0 >= 0 && x0 + G::window_floats <= cols;
  Slot<G>* slots = ring[warp];

  // The float4s outside the image's columns are never copied: zero once.
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int q = 0; q < V; ++q)
      if (!(inside || (x0 + 4 * q >= 0 && x0 + 4 * q < cols))) slots[s][q][lane] = make_float4(0.f, 0.f, 0.f, 0.f);

  float sums[K][C];
#pragma unroll
  for (int m = 0; m < K; ++m)
#pragma unroll
    for (int c = 0; c < C; ++c) sums[m][c] = 0.f;

  // Input rows first_y .. last_y - 1; row y goes to slot (y - first_y) % 4. Before each step
  // that starts at row y, the copies of rows up to y + 2 have been started.
  const int first_y = out_row0 - G::half, last_y = out_row_end + G::half;
  const float* next_row = in + (ptrdiff_t(first_y) * cols + x0);  // row first_y, then one further down
  auto stage_next = [&](int y) {
    stage_row<G>(slots[(y - first_y) & 3], next_row, y >= 0 && y < rows && y < last_y, x0, cols, inside, lane);
    next_row += cols;
  };
#pragma unroll
  for (int a = 0; a < 3; ++a) stage_next(first_y + a);

  const int full_begin = T::skip_outside_sums ? out_row0 + G::half : max(out_row0 - G::half, 0);
  const int full_end = T::skip_outside_sums ? out_row_end - G::half : min(out_row_end + G::half, rows);

  // One row, through the skip path: the chunk's first and last filter_size - 1 rows, and rows
  // of padding.
  auto one_row = [&](int y) {
    wait_for_copies<2>();
    Window<G> w = read_row<G>(slots[(y - first_y) & 3], lane);
    stage_next(y + 3);
    if (y < 0 || y >= rows)
#pragma unroll
      for (int i = 0; i < G::window_floats; ++i) w.v[i] = 0.f;
    const int m_begin = out_row0 - (y - G::half), m_end = out_row_end - (y - G::half);
#pragma unroll
    for (int m = 0; m < K; ++m)
      if (m >= m_begin && m < m_end) add_through_filter_row<T, G>(m, w, nullptr, sums);
    if (y - G::half >= out_row0) store_row<G>(out, cols, y - G::half, col0, sums[0]);
  };

  int y = first_y;
#pragma unroll 1
  for (; y < min(full_begin, last_y); ++y) one_row(y);
#pragma unroll 1
  for (; y + 1 < full_end; y += 2) {
    wait_for_copies<1>();  // rows y and y + 1
    const Window<G> a = read_row<G>(slots[(y - first_y) & 3], lane);
    const Window<G> b = read_row<G>(slots[(y + 1 - first_y) & 3], lane);
    stage_next(y + 3);  // into row y - 1's slot
    float done[C];
    add_two_rows<G>(a, b, sums, done);
    if (y - G::half >= out_row0) store_row<G>(out, cols, y - G::half, col0, done);
    if (y + 1 - G::half >= out_row0) store_row<G>(out, cols, y + 1 - G::half, col0, sums[0]);
    stage_next(y + 4);  // into row y's slot, read before the FMAs above
  }
#pragma unroll 1
  for (; y < last_y; ++y) one_row(y);
}

// Chunks of rows sized so that the grid's warps are all resident at once: the fewest chunks,
// so the fewest halo rows read twice and the fewest rows off the inner path.
// One instantiation, so one occupancy query, per kernel: VectorLoads and Pairs name it.
template <class T, int FilterSize, bool VectorLoads, bool Pairs, class Kernel>
Launch plan(Kernel kernel, int rows, int cols) {
  using G = Geometry<T, FilterSize>;
  static const int resident_warps = resident_warps_of(kernel, G::threads, T::warps_per_block);
  const int strips = ceil_div(cols, G::strip_cols);
  const int chunks_wanted = std::max(1, resident_warps * T::waves / strips);
  return strip_launch(rows, strips, ceil_div(rows, chunks_wanted), T::warps_per_block);
}

template <class T, int FilterSize, bool VectorLoads>
void launch_rolling(const float* in, int rows, int cols, const float* filter, float* out, cudaStream_t stream) {
  constexpr int threads = Geometry<T, FilterSize>::threads;
  if constexpr (T::coefficients == Coefficients::constant_bank)
    cudaMemcpyToSymbolAsync(c_taps, filter, sizeof(float) * FilterSize * FilterSize, 0, cudaMemcpyDeviceToDevice,
                            stream);
  if constexpr (VectorLoads && T::rows_per_step == 2) {
    const auto kernel = conv2d_rolling_pairs_kernel<T, FilterSize>;
    const Launch l = plan<T, FilterSize, VectorLoads, true>(kernel, rows, cols);
    kernel<<<l.blocks, threads, 0, stream>>>(in, rows, cols, l.strips, l.chunks, l.chunk_rows, out);
  } else {
    const auto kernel = conv2d_rolling_sums_kernel<T, FilterSize, VectorLoads>;
    const Launch l = plan<T, FilterSize, VectorLoads, false>(kernel, rows, cols);
    kernel<<<l.blocks, threads, 0, stream>>>(in, rows, cols, l.strips, l.chunks, l.chunk_rows, filter, out);
  }
}

// 16-byte-aligned rows with tuning T (the benchmark's candidates call this too); other rows
// with scalar loads, one row per step at 8 columns per lane, whatever the size: with 4 columns
// per lane ptxas spills at 15 x 15, and only the checks' ragged images take that path.
template <class T, int FilterSize>
void launch_rolling(const float* in, int rows, int cols, const float* filter, float* out, cudaStream_t stream) {
  const bool vector_loads = cols % 4 == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0 &&
                            reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (vector_loads) launch_rolling<T, FilterSize, true>(in, rows, cols, filter, out, stream);
  else launch_rolling<Tuning, FilterSize, false>(in, rows, cols, filter, out, stream);
}

}  // namespace rolling

}  // namespace

// The benchmark compiles this file into its own for the kernels' other tunings, with
// LAB05_KERNELS_ONLY defined, and takes these two functions from the reference it links.
#ifndef LAB05_KERNELS_ONLY

// Up to 5 x 5 the tile kernel runs close to a copy of the image; from 7 x 7 on, the rolling
// sums.
extern "C" void conv2d(const float* d_in, int rows, int cols, const float* d_filter, int filter_size, float* d_out,
                       cudaStream_t stream) {
  if (rows < 1 || cols < 1 || filter_size < 1 || filter_size > MAX_FILTER_SIZE || filter_size % 2 == 0) return;
  switch (filter_size) {
    case 1: return launch_tiled<1>(d_in, rows, cols, d_filter, d_out, stream);
    case 3: return launch_tiled<3>(d_in, rows, cols, d_filter, d_out, stream);
    case 5: return launch_tiled<5>(d_in, rows, cols, d_filter, d_out, stream);
    case 7: return rolling::launch_rolling<rolling::TuningFor<7>, 7>(d_in, rows, cols, d_filter, d_out, stream);
    case 9: return rolling::launch_rolling<rolling::TuningFor<9>, 9>(d_in, rows, cols, d_filter, d_out, stream);
    case 11: return rolling::launch_rolling<rolling::TuningFor<11>, 11>(d_in, rows, cols, d_filter, d_out, stream);
    case 13: return rolling::launch_rolling<rolling::TuningFor<13>, 13>(d_in, rows, cols, d_filter, d_out, stream);
    case 15: return rolling::launch_rolling<rolling::TuningFor<15>, 15>(d_in, rows, cols, d_filter, d_out, stream);
  }
}

// ---- separable filters: one fused pass -----------------------------------------------------
//
// conv2d_separable as a single kernel that never writes the intermediate image: each warp owns
// a strip of 32 x cols_per_lane columns and walks down a chunk of its rows. Per input row it
// stages the row (with its left and right halo) in shared memory, each lane filters its
// columns with the row vector from there (the row pass, in registers), and adds the result
// into filter_size running column sums, one per output row the input row feeds (the column
// pass, in registers). The sums form a ring that rotates by one register per input row; the
// oldest is complete and goes to d_out. The image is read once (plus a halo of filter_size - 1
// rows per chunk, served from L2) and the output written once: the bytes of a copy.
// d_temp is not used.

namespace {

namespace separable {

// The knobs. Measured on an H100, 8192 x 8192, L2 flushed before each call, as % of a
// device-to-device copy's time (9 x 9 / 15 x 15): these 88.4 / 79.9 (96 / 128 registers);
// one row in flight 86.2 / 73.6, three 85.7 / 82.0; chunks for 2 waves 86.8 / 77.1, 4 waves
// 82.2 / 68.9 (their vertical halos cost more than the tail they save); 2 columns per lane
// 85.1 / 74.4; 8 warps per block 85.5 / 79.9, 2 warps 88.4 / 79.2.
struct Tuning {
  static constexpr int warps_per_block = 4;
  static constexpr int cols_per_lane = 4;      // a float4 per lane: each warp reads and writes whole 128-byte lines
  static constexpr int rows_in_flight = 2;     // input rows a warp has loaded ahead of the one it filters
  static constexpr int waves = 1;              // the chunks are sized so that every warp is resident at once
};

template <class T, int FilterSize>
struct Geometry {
  static_assert(FilterSize % 2 == 1 && FilterSize <= MAX_FILTER_SIZE, "odd filter sizes up to MAX_FILTER_SIZE");
  static_assert(T::cols_per_lane == 2 || T::cols_per_lane == 4, "a lane's columns are one float2 or float4");
  static constexpr int threads = 32 * T::warps_per_block;
  static constexpr int lane_cols = T::cols_per_lane;
  static constexpr int half = FilterSize / 2;
  static constexpr int strip_cols = 32 * lane_cols;
  static constexpr int halo = (half + 3) / 4 * 4;    // columns staged on each side, whole float4s
  static constexpr int halo_lanes = halo / 4;        // lanes that load one float4 of the halo on each side
  static constexpr int line_floats = strip_cols + 2 * halo;
  // A lane's window: it needs line[lane_cols * lane + halo - half, + lane_cols + 2 half), and
  // reads whole vectors from line[lane_cols * lane + window_start] on.
  static constexpr int window_start = (halo - half) / lane_cols * lane_cols;
  static constexpr int window_offset = halo - half - window_start;  // first needed value in the window
  static constexpr int window_vectors = (window_offset + lane_cols + 2 * half + lane_cols - 1) / lane_cols;
  static constexpr int window_floats = window_vectors * lane_cols;
  static_assert(2 * halo_lanes <= 32, "the halo is loaded by one float4 per lane");
};

// One input row as a lane holds it between its load and its staging in shared memory: its own
// columns, and one float4 of the halo for the first 2 halo_lanes lanes.
template <int LaneCols>
struct LaneRow {
  Floats<LaneCols> own;
  Floats<4> halo;
};

// Which image columns a lane's halo float4 covers: left of the strip for the first halo_lanes
// lanes, right of it for the next halo_lanes.
template <class G>
__device__ int halo_col(int strip_col0, int lane) {
  return lane < G::halo_lanes ? strip_col0 - G::halo + 4 * lane
                              : strip_col0 + G::strip_cols + 4 * (lane - G::halo_lanes);
}

template <class G, bool VectorLoads>
__device__ LaneRow<G::lane_cols> load_lane_row(const float* __restrict__ in, int rows, int cols, int y,
                                              int strip_col0, int lane) {
  LaneRow<G::lane_cols> r{};
  if (y < 0 || y >= rows) return r;  // zero padding: a row outside the image filters to zeros
  const float* row_start = in + size_t(y) * cols;
  r.own = load_floats<VectorLoads, G::lane_cols>(row_start, strip_col0 + G::lane_cols * lane, cols);
  if (lane < 2 * G::halo_lanes) r.halo = load_floats<VectorLoads, 4>(row_start, halo_col<G>(strip_col0, lane), cols);
  return r;
}

template <class G>
__device__ void stage_lane_row(float* line, const LaneRow<G::lane_cols>& r, int lane) {
  using V = typename Vec<G::lane_cols>::type;
  *reinterpret_cast<V*>(line + G::halo + G::lane_cols * lane) = *reinterpret_cast<const V*>(&r.own);
  if (lane < G::halo_lanes)
    *reinterpret_cast<float4*>(line + 4 * lane) = *reinterpret_cast<const float4*>(&r.halo);
  else if (lane < 2 * G::halo_lanes)
    *reinterpret_cast<float4*>(line + G::halo + G::strip_cols + 4 * (lane - G::halo_lanes)) =
        *reinterpret_cast<const float4*>(&r.halo);
}

// The row pass for a lane's columns, from the staged row.
template <class G, int FilterSize>
__device__ Floats<G::lane_cols> filter_along_row(const float* line, int lane, const float (&row_filter)[FilterSize]) {
  using V = typename Vec<G::lane_cols>::type;
  float window[G::window_floats];
#pragma unroll
  for (int q = 0; q < G::window_vectors; ++q)
    *reinterpret_cast<V*>(&window[q * G::lane_cols]) =
        *reinterpret_cast<const V*>(line + G::lane_cols * lane + G::window_start + q * G::lane_cols);
  Floats<G::lane_cols> filtered;
#pragma unroll
  for (int c = 0; c < G::lane_cols; ++c) {
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < FilterSize; ++j) sum = fmaf(window[G::window_offset + c + j], row_filter[j], sum);
    filtered.v[c] = sum;
  }
  return filtered;
}

template <class G, bool VectorLoads>
__device__ void store_lane_cols(float* __restrict__ out, int cols, int row, int strip_col0, int lane,
                                const Floats<G::lane_cols>& values) {
  float* row_start = out + size_t(row) * cols;
  const int x = strip_col0 + G::lane_cols * lane;
  if constexpr (VectorLoads) {
    using V = typename Vec<G::lane_cols>::type;
    if (x < cols) *reinterpret_cast<V*>(row_start + x) = *reinterpret_cast<const V*>(&values);
  } else {
#pragma unroll
    for (int c = 0; c < G::lane_cols; ++c)
      if (x + c < cols) row_start[x + c] = values.v[c];
  }
}

// One warp per (strip, chunk) unit, numbered strip first, so that the warps of a block and of
// neighbouring blocks work on neighbouring strips of the same rows: the halo columns a warp
// reads are another warp's own, often in L1 or L2 already.
template <class T, int FilterSize, bool VectorLoads>
__global__ void __launch_bounds__(Geometry<T, FilterSize>::threads)
separable_fused_ring_kernel(const float* __restrict__ in, int rows, int cols, int strips, int chunks, int chunk_rows,
                            const float* __restrict__ d_row_filter, const float* __restrict__ d_col_filter,
                            float* __restrict__ out) {
  using G = Geometry<T, FilterSize>;
  constexpr int K = FilterSize;
  __shared__ __align__(16) float lines[T::warps_per_block][2][G::line_floats];  // two slots: one __syncwarp per row

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int unit = int(blockIdx.x) * T::warps_per_block + warp;
  if (unit >= strips * chunks) return;
  const int strip_col0 = (unit % strips) * G::strip_cols;
  const int out_row0 = (unit / strips) * chunk_rows;
  const int out_row_end = min(out_row0 + chunk_rows, rows);

  // Every lane of a warp loads the same coefficients: one broadcast load each.
  float row_filter[K], col_filter[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    row_filter[k] = __ldg(d_row_filter + k);
    col_filter[k] = __ldg(d_col_filter + k);
  }

  // Input row y = first_y + step feeds output rows y - half .. y + half. sums[(phase + m) % K]
  // holds output row y - half + m at phase = step % K, so the loop unrolled by K finds each sum
  // in a fixed register.
  const int first_y = out_row0 - G::half;
  float sums[K][G::lane_cols];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int c = 0; c < G::lane_cols; ++c) sums[k][c] = 0.f;

  LaneRow<G::lane_cols> ahead[T::rows_in_flight];
#pragma unroll
  for (int a = 0; a < T::rows_in_flight; ++a)
    ahead[a] = load_lane_row<G, VectorLoads>(in, rows, cols, first_y + a, strip_col0, lane);

  for (int round_y = first_y; round_y - G::half < out_row_end; round_y += K) {
#pragma unroll
    for (int phase = 0; phase < K; ++phase) {
      const int y = round_y + phase;
      const LaneRow<G::lane_cols> current = ahead[0];
#pragma unroll
      for (int a = 0; a + 1 < T::rows_in_flight; ++a) ahead[a] = ahead[a + 1];
      ahead[T::rows_in_flight - 1] =
          load_lane_row<G, VectorLoads>(in, rows, cols, y + T::rows_in_flight, strip_col0, lane);

      float* line = lines[warp][y & 1];
      stage_lane_row<G>(line, current, lane);
      __syncwarp();
      const Floats<G::lane_cols> filtered = filter_along_row<G>(line, lane, row_filter);

#pragma unroll
      for (int m = 0; m < K; ++m)
#pragma unroll
        for (int c = 0; c < G::lane_cols; ++c)
          sums[(phase + m) % K][c] = fmaf(filtered.v[c], col_filter[K - 1 - m], sums[(phase + m) % K][c]);

      const int out_row = y - G::half;  // its last input row has just been added
      if (out_row >= out_row0 && out_row < out_row_end) {
        Floats<G::lane_cols> done;
#pragma unroll
        for (int c = 0; c < G::lane_cols; ++c) done.v[c] = sums[phase][c];
        store_lane_cols<G, VectorLoads>(out, cols, out_row, strip_col0, lane, done);
      }
#pragma unroll
      for (int c = 0; c < G::lane_cols; ++c) sums[phase][c] = 0.f;  // now output row y + half + 1's
    }
  }
}

// Chunks of rows sized so that the grid's warps fill the GPU `waves` times over, each chunk a
// multiple of filter_size plus one rows long: with the filter_size - 1 rows of its vertical
// halo, a whole number of unrolled rounds.
template <class T, int FilterSize, bool VectorLoads>
Launch plan(int rows, int cols) {
  using G = Geometry<T, FilterSize>;
  static const int resident_warps =
      resident_warps_of(separable_fused_ring_kernel<T, FilterSize, VectorLoads>, G::threads, T::warps_per_block);
  const int strips = ceil_div(cols, G::strip_cols);
  const int chunks_wanted = std::max(1, resident_warps * T::waves / strips);
  const int rows_per_chunk = ceil_div(rows, chunks_wanted);
  const int chunk_rows = ceil_div(std::max(rows_per_chunk - 1, 1), FilterSize) * FilterSize + 1;
  return strip_launch(rows, strips, chunk_rows, T::warps_per_block);
}

template <class T, int FilterSize, bool VectorLoads>
void launch_fused(const float* in, int rows, int cols, const float* row_filter, const float* col_filter, float* out,
                  cudaStream_t stream) {
  const Launch l = plan<T, FilterSize, VectorLoads>(rows, cols);
  separable_fused_ring_kernel<T, FilterSize, VectorLoads><<<l.blocks, Geometry<T, FilterSize>::threads, 0, stream>>>(
      in, rows, cols, l.strips, l.chunks, l.chunk_rows, row_filter, col_filter, out);
}

template <class T, int FilterSize>
void launch_separable(const float* in, int rows, int cols, const float* row_filter, const float* col_filter,
                      float* out, cudaStream_t stream) {
  const bool vector_loads = cols % 4 == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0 &&
                            reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (vector_loads) launch_fused<T, FilterSize, true>(in, rows, cols, row_filter, col_filter, out, stream);
  else launch_fused<T, FilterSize, false>(in, rows, cols, row_filter, col_filter, out, stream);
}

template <class T>
void dispatch(const float* in, int rows, int cols, const float* row_filter, const float* col_filter, int filter_size,
              float* out, cudaStream_t stream) {
  switch (filter_size) {
    case 1: return launch_separable<T, 1>(in, rows, cols, row_filter, col_filter, out, stream);
    case 3: return launch_separable<T, 3>(in, rows, cols, row_filter, col_filter, out, stream);
    case 5: return launch_separable<T, 5>(in, rows, cols, row_filter, col_filter, out, stream);
    case 7: return launch_separable<T, 7>(in, rows, cols, row_filter, col_filter, out, stream);
    case 9: return launch_separable<T, 9>(in, rows, cols, row_filter, col_filter, out, stream);
    case 11: return launch_separable<T, 11>(in, rows, cols, row_filter, col_filter, out, stream);
    case 13: return launch_separable<T, 13>(in, rows, cols, row_filter, col_filter, out, stream);
    case 15: return launch_separable<T, 15>(in, rows, cols, row_filter, col_filter, out, stream);
  }
}

}  // namespace separable

}  // namespace

extern "C" void conv2d_separable(const float* d_in, int rows, int cols, const float* d_row_filter,
                                 const float* d_col_filter, int filter_size, float* d_temp, float* d_out,
                                 cudaStream_t stream) {
  (void)d_temp;  // the fused kernel keeps its intermediate rows in registers
  if (rows < 1 || cols < 1 || filter_size < 1 || filter_size > MAX_FILTER_SIZE || filter_size % 2 == 0) return;
  separable::dispatch<separable::Tuning>(d_in, rows, cols, d_row_filter, d_col_filter, filter_size, d_out, stream);
}

#endif  // LAB05_KERNELS_ONLY
