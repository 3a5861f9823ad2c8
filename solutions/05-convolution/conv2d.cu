// Lab 05 reference solution: the chapter's v3 (a shared-memory tile with its halo, the filter
// in constant memory), taken three steps further:
//   - each thread computes a column strip of outputs, so every value it reads from shared
//     memory serves up to filter_size outputs (register reuse; the chapter's v3 reads
//     filter_size^2 values from shared memory for every output);
//   - the filter size is a template parameter, so the loops unroll and each coefficient has a
//     fixed place: a register, or an operand read straight from the constant bank by the FMA;
//   - the tile is loaded with 16-byte loads when the rows are 16-byte aligned;
//   - filters up to 5 x 5 skip constant memory: each thread loads the filter into registers.
// Every size and every odd filter size up to MAX_FILTER_SIZE is handled; pixels outside the
// image count as zero.
#include "conv2d.h"

#include <cstdint>

namespace {

// Written once per call, from d_filter, on the call's stream (cudaMemcpyToSymbolAsync), for
// filters larger than 5 x 5. Every thread of a warp reads the same coefficient at the same
// time: the constant cache broadcasts it to all 32 lanes in one access.
__constant__ float c_filter[MAX_FILTER_SIZE * MAX_FILTER_SIZE];

// The filter as the kernel reads it. The copy to constant memory is an operation of its own on
// the stream, which the kernel must wait for: about 2 us per call, 1% of a 5 x 5 filter over
// 8192 x 8192 (H100). Up to 5 x 5 each thread loads the filter from d_filter instead, with
// 16-byte loads that every thread of a warp makes at the same address (ptxas reports 32
// registers per thread at 5 x 5, as with constant memory). Larger filters read constant memory:
// at 9 x 9 the loaded filter made the kernel 40% slower.
template <int FilterSize>
struct Filter {
  static constexpr bool in_registers = FilterSize <= 5;
  static constexpr int count = FilterSize * FilterSize;
  float loaded[in_registers ? count : 1];

  __device__ explicit Filter(const float* __restrict__ filter) {
    if constexpr (in_registers) {
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
  }

  __device__ float operator()(int i, int j) const {
    if constexpr (in_registers) return loaded[i * FilterSize + j];
    else return c_filter[i * FilterSize + j];
  }
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
void launch(const float* in, int rows, int cols, const float* filter, float* out, cudaStream_t stream) {
  if (!Filter<FilterSize>::in_registers)
    cudaMemcpyToSymbolAsync(c_filter, filter, sizeof(float) * Filter<FilterSize>::count, 0, cudaMemcpyDeviceToDevice,
                            stream);
  const int tiles_x = ceil_div(cols, Tiling::tile_cols);
  const int tiles_y = ceil_div(rows, Tiling::tile_rows);
  const bool vector_loads = cols % 4 == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0;
  const unsigned blocks = unsigned(tiles_x) * unsigned(tiles_y);
  conv2d_tiled_register_strip_kernel<FilterSize>
      <<<blocks, dim3(Tiling::threads_x, Tiling::threads_y), 0, stream>>>(in, rows, cols, tiles_x, vector_loads, filter, out);
}

}  // namespace

extern "C" void conv2d(const float* d_in, int rows, int cols, const float* d_filter, int filter_size, float* d_out,
                       cudaStream_t stream) {
  if (rows < 1 || cols < 1 || filter_size < 1 || filter_size > MAX_FILTER_SIZE || filter_size % 2 == 0) return;
  switch (filter_size) {
    case 1: return launch<1>(d_in, rows, cols, d_filter, d_out, stream);
    case 3: return launch<3>(d_in, rows, cols, d_filter, d_out, stream);
    case 5: return launch<5>(d_in, rows, cols, d_filter, d_out, stream);
    case 7: return launch<7>(d_in, rows, cols, d_filter, d_out, stream);
    case 9: return launch<9>(d_in, rows, cols, d_filter, d_out, stream);
    case 11: return launch<11>(d_in, rows, cols, d_filter, d_out, stream);
    case 13: return launch<13>(d_in, rows, cols, d_filter, d_out, stream);
    case 15: return launch<15>(d_in, rows, cols, d_filter, d_out, stream);
  }
}
