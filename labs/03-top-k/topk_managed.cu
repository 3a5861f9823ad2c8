// Lab 03 part 2 starter: the top-k of an input in managed memory, the way the chapter ran its
// kernels on `__managed__` arrays: the kernel reads the input where it lies.
//
// It is right as soon as your topk is, and slow: the input's pages are in host memory when the
// call starts, so the kernel's first touch of each page stops on a page fault while the driver
// moves that page to the GPU, and the read runs at the speed of those faults, not of the GPU's
// memory. The README's part 2 says how to move the input first, and how to see the faults.
#include "topk.h"

extern "C" void topk_managed(const int32_t* managed_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  topk(managed_in, n, k, d_out, stream);
}
