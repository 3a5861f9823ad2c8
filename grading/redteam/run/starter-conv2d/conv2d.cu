// Lab 05 starter: the chapter's first convolution kernel (convolution_kernel_v1). One thread
// computes one output pixel, reading its window of the image and the filter straight from
// global memory, on a grid of 16 x 16 blocks rounded up to cover the image.
//
// It is wrong in two ways the chapter's code is: at the borders, and in the last blocks of
// the grid when the image is not a multiple of 16 in both directions. The checks' messages
// tell you which; the README explains both. Once it is right, it is slow: the README says why
// and what the chapter does about it (constant memory, then a shared-memory tile).
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
