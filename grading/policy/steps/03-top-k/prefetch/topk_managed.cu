// Policy step for lab 03: the chapter tier's version, with part 2's input moved to the GPU
// before its top-k.
//
// Part 1 is the chapter tier's file (a link to grading/policy/chapter/03-top-k/topk.cu). Part
// 2 is part 2's starter with one change, the README's part 2 technique: one cudaMemPrefetchAsync
// of the whole managed input to the GPU, on the call's stream, ahead of the same topk, so the
// kernel reads device memory instead of faulting every page across.
//
// Why it is a step: it is the chapter's version graded without (the chapter tier) and with the
// prefetch, so the difference between the two is what part 2's speed points give for it. The
// chapter's top-k is slow beside the reference's, but the transfer is most of a part 2 call, so
// the prefetch should earn most of part 2's points: the chapter's 70-85 with that on top.
#include "topk.h"

extern "C" void topk_managed(const int32_t* managed_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  int device = 0;
  cudaGetDevice(&device);
#if CUDART_VERSION >= 13000
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = device;
  cudaMemPrefetchAsync(managed_in, n * sizeof(int32_t), location, 0, stream);
#else
  cudaMemPrefetchAsync(managed_in, n * sizeof(int32_t), device, stream);
#endif
  topk(managed_in, n, k, d_out, stream);
}
