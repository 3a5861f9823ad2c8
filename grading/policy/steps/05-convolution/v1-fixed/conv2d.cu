// Policy step for lab 05: the planted bugs fixed, and nothing else: the chapter's v1, right.
//
// conv2d. The starter is the chapter's first kernel (convolution_kernel_v1), wrong in two
// ways: threads past the image's last row or column still store (into the next row, and past
// the end of d_out), and window positions outside the image take the nearest edge pixel where
// the contract pads with zeros. Here a thread past the image returns before it computes
// anything (the kernel has no barrier), and a window position outside the image is skipped (it
// adds 0). Everything else is the starter's: one output per thread, 16 x 16 blocks, the image
// and the filter read straight from global memory.
//
// conv2d_separable. The starter ran d_row_filter in both passes (symmetric taken for
// separable); here the column pass takes d_col_filter. The two passes stay the starter's, from
// global memory, through d_temp.
//
// Why it is a tier: it is right and has none of the chapter's lessons (constant memory, the
// shared tile, tiled separable passes), so it must earn more than the starter and less than
// the chapter's technique, and less than each of the chapter's steps after it.
// Follows seed 004_39f2774132d9005b.txt, convolution_kernel_v1, with the lab README's two
// fixes ("The chapter's first kernel, and its two flaws").
#include "conv2d.h"

namespace {

constexpr int block_dim = 16;  // the chapter's BLOCK_DIM: 16 x 16 threads per block

__global__ void conv2d_global_memory_kernel(const float* in, int rows, int cols, const float* filter,
                                            int filter_size, float* out) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  if (row >= rows || col >= cols) return;  // past the image: nothing to store (no barrier here)
  const int half = filter_size / 2;

  float result = 0.f;
  for (int filter_row = -half; filter_row <= half; ++filter_row) {
    const int image_row = row + filter_row;
    if (image_row < 0 || image_row >= rows) continue;  // zero padding
    for (int filter_col = -half; filter_col <= half; ++filter_col) {
      const int image_col = col + filter_col;
      if (image_col < 0 || image_col >= cols) continue;  // zero padding
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
  // Each pass with its own vector: the column pass takes d_col_filter (the starter took the row's).
  row_pass_global_memory_kernel<<<grid, block, 0, stream>>>(d_in, rows, cols, d_row_filter, filter_size, d_temp);
  column_pass_global_memory_kernel<<<grid, block, 0, stream>>>(d_temp, rows, cols, d_col_filter, filter_size,
                                                               d_out);
}
