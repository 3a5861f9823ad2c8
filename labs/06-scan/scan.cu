// Lab 06 starter: the chapter's Blelloch scan (scan_v2), in one thread block of BLOCK_DIM
// threads that scans 2 x BLOCK_DIM elements in shared memory: an up-sweep that builds partial
// sums in a tree, then a down-sweep that carries them back down to every element.
//
// It is right for n <= 2 x BLOCK_DIM = 2048 and silently wrong above: one block scans the
// first 2048 elements and nothing writes the rest. The README shows how to scan any n
// (scan each block, scan the block sums, add them back), and then how to do it in one pass.
#include "scan.h"

namespace {

constexpr int BLOCK_DIM = 1024;
constexpr int block_items = 2 * BLOCK_DIM;  // each thread loads two elements

// Sums are kept as uint32_t: unsigned addition wraps by definition, which is what the
// contract asks of int32 (signed overflow is undefined behaviour in C++).
__global__ void scan_blelloch_single_block_kernel(const int32_t* in, size_t n, int32_t* out) {
  __shared__ uint32_t s_buffer[block_items];
  const int tid = threadIdx.x;
  const size_t first = tid, second = tid + BLOCK_DIM;  // the two elements this thread loads

  // Elements past n count as zero, so the tree below always works on a full 2048.
  s_buffer[tid] = first < n ? uint32_t(in[first]) : 0u;
  s_buffer[tid + BLOCK_DIM] = second < n ? uint32_t(in[second]) : 0u;

  // Up-sweep: after the step with stride `offset`, element offset * (2k + 2) - 1 holds the
  // sum of the 2 x offset elements that end there.
  int offset = 1;
  for (; offset < block_items; offset <<= 1) {
    __syncthreads();
    const int idx_a = offset * (2 * tid + 1) - 1;
    const int idx_b = offset * (2 * tid + 2) - 1;
    if (idx_b < block_items) s_buffer[idx_b] += s_buffer[idx_a];
  }

  // Down-sweep: each finished prefix is added to the partial sum `offset` places to its right.
  for (offset >>= 1; offset > 0; offset >>= 1) {
    __syncthreads();
    const int idx_a = offset * (2 * tid + 2) - 1;
    const int idx_b = offset * (2 * tid + 3) - 1;
    if (idx_b < block_items) s_buffer[idx_b] += s_buffer[idx_a];
  }
  __syncthreads();

  if (first < n) out[first] = int32_t(s_buffer[tid]);
  if (second < n) out[second] = int32_t(s_buffer[tid + BLOCK_DIM]);
}

}  // namespace

extern "C" void inclusive_scan(const int32_t* d_in, size_t n, int32_t* d_out, cudaStream_t stream) {
  if (n == 0) return;
  // One block, as in the chapter: it covers the first 2 x BLOCK_DIM elements only.
  scan_blelloch_single_block_kernel<<<1, BLOCK_DIM, 0, stream>>>(d_in, n, d_out);
}
