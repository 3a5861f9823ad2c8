// Policy step for lab 05: the chapter's step 1 (its v2), the filter in constant memory.
//
// conv2d. The previous step (v1-fixed: the chapter's first kernel with its two flaws fixed)
// with one change: the filter is copied into a __constant__ array on every call, device to
// device on the call's stream (cudaMemcpyToSymbolAsync; the filter may change between calls),
// and the kernel reads its coefficients from there, a broadcast to the whole warp through the
// constant cache. The image is still read straight from global memory.
//
// conv2d_separable. The same change: both vectors go to constant memory on every call; the two
// passes still read the image and d_temp from global memory.
//
// Why it is a tier: the README teaches it as the chapter's first step, so it must earn more
// than the step before it and no more than the chapter's technique (v3's shared tile and tiled
// separable passes).
// Follows seed 004_39f2774132d9005b.txt, "使用常量内存优化滤波系数" (convolution_kernel_v2);
// lab README, "Step 1 (the chapter's v2): the filter in constant memory".
#include "conv2d.h"

namespace {

constexpr int block_dim = 16;  // the chapter's BLOCK_DIM: 16 x 16 threads per block

__constant__ float c_filter[MAX_FILTER_SIZE * MAX_FILTER_SIZE];

__global__ void conv2d_constant_filter_kernel(const float* in, int rows, int cols, int filter_size, float* out) {
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
      const float filter_value = c_filter[(filter_row + half) * filter_size + filter_col + half];
      result += image_value * filter_value;
    }
  }
  out[size_t(row) * cols + col] = result;
}

}  // namespace

extern "C" void conv2d(const float* d_in, int rows, int cols, const float* d_filter, int filter_size, float* d_out,
                       cudaStream_t stream) {
  // The filter may change between calls: copy it every time, ordered on the stream.
  cudaMemcpyToSymbolAsync(c_filter, d_filter, sizeof(float) * filter_size * filter_size, 0, cudaMemcpyDeviceToDevice,
                          stream);
  const dim3 block(block_dim, block_dim);
  const dim3 grid((cols + block_dim - 1) / block_dim, (rows + block_dim - 1) / block_dim);
  conv2d_constant_filter_kernel<<<grid, block, 0, stream>>>(d_in, rows, cols, filter_size, d_out);
}

// ---- separable filters: two passes ---------------------------------------------------------

namespace {

// Both vectors in constant memory, copied on every call (they may change between calls).
__constant__ float c_row_filter[MAX_FILTER_SIZE];
__constant__ float c_col_filter[MAX_FILTER_SIZE];

// Pass 1: each thread filters one pixel of its row with the horizontal vector, into temp,
// reading the image from global memory.
__global__ void row_pass_constant_filter_kernel(const float* in, int rows, int cols, int filter_size, float* temp) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  if (row >= rows || col >= cols) return;
  const int half = filter_size / 2;
  float result = 0.f;
  for (int tap = -half; tap <= half; ++tap) {
    const int image_col = col + tap;
    if (image_col < 0 || image_col >= cols) continue;  // zero padding
    result += in[size_t(row) * cols + image_col] * c_row_filter[tap + half];
  }
  temp[size_t(row) * cols + col] = result;
}

// Pass 2: each thread filters one pixel of its column of temp with the vertical vector.
__global__ void column_pass_constant_filter_kernel(const float* temp, int rows, int cols, int filter_size,
                                                   float* out) {
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  if (row >= rows || col >= cols) return;
  const int half = filter_size / 2;
  float result = 0.f;
  for (int tap = -half; tap <= half; ++tap) {
    const int image_row = row + tap;
    if (image_row < 0 || image_row >= rows) continue;  // zero padding
    result += temp[size_t(image_row) * cols + col] * c_col_filter[tap + half];
  }
  out[size_t(row) * cols + col] = result;
}

}  // namespace

extern "C" void conv2d_separable(const float* d_in, int rows, int cols, const float* d_row_filter,
                                 const float* d_col_filter, int filter_size, float* d_temp, float* d_out,
                                 cudaStream_t stream) {
  const size_t filter_bytes = sizeof(float) * filter_size;
  cudaMemcpyToSymbolAsync(c_row_filter, d_row_filter, filter_bytes, 0, cudaMemcpyDeviceToDevice, stream);
  cudaMemcpyToSymbolAsync(c_col_filter, d_col_filter, filter_bytes, 0, cudaMemcpyDeviceToDevice, stream);
  const dim3 block(block_dim, block_dim);
  const dim3 grid((cols + block_dim - 1) / block_dim, (rows + block_dim - 1) / block_dim);
  row_pass_constant_filter_kernel<<<grid, block, 0, stream>>>(d_in, rows, cols, filter_size, d_temp);
  column_pass_constant_filter_kernel<<<grid, block, 0, stream>>>(d_temp, rows, cols, filter_size, d_out);
}
