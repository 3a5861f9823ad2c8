// Lab 05 starter: the chapter's first convolution kernel (convolution_kernel_v1). One thread
// computes one output pixel, reading its window of the image and the filter straight from
// global memory, on a grid of 16 x 16 blocks rounded up to cover the image.
//
// It is wrong in two ways the chapter's code is: at the borders, and in the last blocks of
// the grid when the image is not a multiple of 16 in both directions. The checks' messages
// tell you which; the README explains both. Once it is right, it is slow: the README says why
// and what the chapter does about it (constant memory, then a shared-memory tile).
//
// conv2d_separable, the second part, follows the chapter's closing remark that a symmetric or
// separable filter splits into a horizontal and a vertical filter: a row pass into d_temp,
// then a column pass, each thread reading its taps straight from global memory. Its borders
// and grid are right this time, but it takes the remark too literally, and a filter whose two
// vectors differ comes out wrong: the checks' message says how. Then make it fast (README,
// "Separable filters").
#include "conv2d.h"

namespace {

constexpr int block_dim = 16;  // the chapter's BLOCK_DIM: 16 x 16 threads per block

__global__ void conv2d_global_memory_kernel(const float* in, int rows, int cols, const float* filter,
                                            int filter_size, float* out) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  const int half = filter_size / 2;

  float result = 0.f;
  for (int filter_row = -half; filter_row <= half; ++filter_row) {
    for (int filter_col = -half; filter_col <= half; ++filter_col) {
      // Like the chapter's v1: a window position outside the image takes the nearest edge pixel.
      const int image_row = min(max(row + filter_row, 0), rows - 1);
      const int image_col = min(max(col + filter_col, 0), cols - 1);
      const float image_value = in[size_t(image_row) * cols + image_col];
      const float filter_value = filter[(filter_row + half) * filter_size + filter_col + half];
      result += image_value * filter_value;
    }
  }
  out[size_t(row) * cols + col] = result;
}

}  // namespace

extern "C" void conv2d(const float* d_in, int rows, int cols, const float* d_filter, int filter_size, float* d_out,
                       cudaStream_t stream) {
  const dim3 block(block_dim, block_dim);
  const dim3 grid((cols + block_dim - 1) / block_dim, (rows + block_dim - 1) / block_dim);
  conv2d_global_memory_kernel<<<grid, block, 0, stream>>>(d_in, rows, cols, d_filter, filter_size, d_out);
}

// ---- separable filters: two passes ---------------------------------------------------------

namespace {

// Pass 1: each thread filters one pixel of its row with the horizontal vector, into temp.
__global__ void row_pass_global_memory_kernel(const float* in, int rows, int cols, const float* row_filter,
                                              int filter_size, float* temp) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  if (row >= rows || col >= cols) return;
  const int half = filter_size / 2;
  float result = 0.f;
  for (int tap = -half; tap <= half; ++tap) {
    const int image_col = col + tap;
    if (image_col < 0 || image_col >= cols) continue;  // zero padding
    result += in[size_t(row) * cols + image_col] * row_filter[tap + half];
  }
  temp[size_t(row) * cols + col] = result;
}

// Pass 2: each thread filters one pixel of its column of temp with the vertical vector.
__global__ void column_pass_global_memory_kernel(const float* temp, int rows, int cols, const float* col_filter,
                                                 int filter_size, float* out) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  if (row >= rows || col >= cols) return;
  const int half = filter_size / 2;
  float result = 0.f;
  for (int tap = -half; tap <= half; ++tap) {
    const int image_row = row + tap;
    if (image_row < 0 || image_row >= rows) continue;  // zero padding
    result += temp[size_t(image_row) * cols + col] * col_filter[tap + half];
  }
  out[size_t(row) * cols + col] = result;
}

}  // namespace

extern "C" void conv2d_separable(const float* d_in, int rows, int cols, const float* d_row_filter,
                                 const float* d_col_filter, int filter_size, float* d_temp, float* d_out,
                                 cudaStream_t stream) {
  const dim3 block(block_dim, block_dim);
  const dim3 grid((cols + block_dim - 1) / block_dim, (rows + block_dim - 1) / block_dim);
  // "A symmetric filter splits into a horizontal and a vertical filter": the same vector both ways.
  const float* vertical_filter = d_row_filter;
  row_pass_global_memory_kernel<<<grid, block, 0, stream>>>(d_in, rows, cols, d_row_filter, filter_size, d_temp);
  column_pass_global_memory_kernel<<<grid, block, 0, stream>>>(d_temp, rows, cols, vertical_filter, filter_size,
                                                               d_out);
}
