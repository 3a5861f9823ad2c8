// Policy step for lab 05: the chapter's step 2 (its v3), a shared-memory tile with a halo.
//
// conv2d. The previous step (constant-memory: the filter in __constant__ memory, copied on
// every call) with the chapter's shared tile: the block first copies its (16 + 2h) x (16 + 2h)
// input tile, halo included, into dynamic shared memory with the chapter's loop (zeros
// outside the image), __syncthreads(), then each output reads its window from the tile; the
// store is guarded, and threads past the image still fill their share of the tile and reach
// the barrier. This is the chapter tier's conv2d, line for line.
//
// conv2d_separable. Unchanged from the previous step: both vectors in constant memory, two
// passes from global memory through d_temp. The chapter tier's one addition over this step is
// a shared-memory tile in each separable pass.
//
// Why it is a tier: the README teaches it as the chapter's second step, so it must earn more
// than the step before it and no more than the chapter's technique.
// Follows seed 004_39f2774132d9005b.txt, "使用共享内存平铺输入数据" (convolution_kernel_v3);
// lab README, "Step 2 (the chapter's v3): a shared-memory tile with a halo".
#include "conv2d.h"

namespace {

constexpr int block_dim = 16;  // the chapter's BLOCK_DIM: 16 x 16 threads per block

__constant__ float c_filter[MAX_FILTER_SIZE * MAX_FILTER_SIZE];

__global__ void conv2d_shared_tile_kernel(const float* in, int rows, int cols, int filter_size, float* out) {
  extern __shared__ float s_input[];
  const int col = blockDim.x * blockIdx.x + threadIdx.x;
  const int row = blockDim.y * blockIdx.y + threadIdx.y;
  const int half = filter_size / 2;
  const int tile_size = block_dim + 2 * half;

  // Fill the tile, halo included, stepping by the block size; zeros outside the image.
  for (int step_row = 0; step_row <= tile_size / block_dim; ++step_row) {
    for (int step_col = 0; step_col <= tile_size / block_dim; ++step_col) {
      const int image_row = row + block_dim * step_row - half;
      const int image_col = col + block_dim * step_col - half;
      const int tile_row = threadIdx.y + block_dim * step_row;
      const int tile_col = threadIdx.x + block_dim * step_col;
      if (tile_row >= tile_size || tile_col >= tile_size) continue;
      const bool inside = image_row >= 0 && image_row < rows && image_col >= 0 && image_col < cols;
      s_input[tile_size * tile_row + tile_col] = inside ? in[size_t(image_row) * cols + image_col] : 0.f;
    }
  }
  __syncthreads();  // the whole tile is written before anyone reads it

  float result = 0.f;
  for (int filter_row = -half; filter_row <= half; ++filter_row) {
    for (int filter_col = -half; filter_col <= half; ++filter_col) {
      const int tile_row = threadIdx.y + half + filter_row;
      const int tile_col = threadIdx.x + half + filter_col;
      const float image_value = s_input[tile_size * tile_row + tile_col];
      const float filter_value = c_filter[(filter_row + half) * filter_size + filter_col + half];
      result += image_value * filter_value;
    }
  }
  if (row < rows && col < cols) out[size_t(row) * cols + col] = result;
}

}  // namespace

extern "C" void conv2d(const float* d_in, int rows, int cols, const float* d_filter, int filter_size, float* d_out,
                       cudaStream_t stream) {
  // The filter may change between calls: copy it every time, ordered on the stream.
  cudaMemcpyToSymbolAsync(c_filter, d_filter, sizeof(float) * filter_size * filter_size, 0, cudaMemcpyDeviceToDevice,
                          stream);
  const int tile_size = block_dim + 2 * (filter_size / 2);
  const size_t shared_bytes = sizeof(float) * tile_size * tile_size;
  const dim3 block(block_dim, block_dim);
  const dim3 grid((cols + block_dim - 1) / block_dim, (rows + block_dim - 1) / block_dim);
  conv2d_shared_tile_kernel<<<grid, block, shared_bytes, stream>>>(d_in, rows, cols, filter_size, d_out);
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
