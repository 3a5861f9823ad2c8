// Lab 11 contract. Do not edit: the grader compiles your pipeline.cu and chain.cu against its own
// copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// Compiled by nvcc for both sides, and by a plain C++ compiler for the grader's host program.
#if defined(__CUDACC__)
#define PIPELINE_HOST_DEVICE __host__ __device__
#else
#define PIPELINE_HOST_DEVICE
#endif

// The work per element, fixed by the contract: `rounds` rounds of a multiply-add followed by
// a rotate-xor, mixing a pixel of image a with the pixel of image b at the same place. Each
// round is three integer instructions on the GPU (IMAD, SHF, LOP3) and depends on the one
// before, so neither the compiler nor you can fold rounds together: `rounds` sets how long
// the kernel takes, and the lab's cases use it to make compute as long as the copies, or
// longer, or much shorter. Call this function in your kernel; do not reimplement it.
PIPELINE_HOST_DEVICE inline uint32_t merge_element(uint32_t a, uint32_t b, int rounds) {
  uint32_t x = a;
  uint32_t y = b ^ 0x9E3779B9u;
  for (int round = 0; round < rounds; ++round) {
    x = x * 0x2C1B3C6Du + y;          // odd multiplier: no information lost
    y = ((y << 13) | (y >> 19)) ^ x;  // carries high bits back down
  }
  return x ^ y;
}

// Computes h_out[i] = merge_element(h_a[i], h_b[i], rounds) for i in [0, n) on the GPU.
//
// - h_a, h_b and h_out are in page-locked (pinned) host memory, 4-byte aligned, no more.
//   h_a and h_b must come back unchanged; nothing outside h_out[0..n) may be written.
// - d_a, d_b and d_out are device workspace of n elements each, 256-byte aligned, yours to
//   use as you like during the call (their contents on entry are junk).
// - n may be 0, 1, or any size up to 2^27; rounds may be 0.
// - The caller synchronises every device after the call and only then reads h_out: you may
//   return before the work finishes, and you may use streams and events of your own (create
//   them once and keep them). Work the caller put on `stream` before the call comes first.
extern "C" void merge_pipelined(const uint32_t* h_a, const uint32_t* h_b, uint32_t* h_out, size_t n, int rounds,
                                uint32_t* d_a, uint32_t* d_b, uint32_t* d_out, cudaStream_t stream);

// ---- Part 2, launch cost (in chain.cu) ----------------------------------------------------------

// Step `step` of the chain mixes each element i with its partner, the element
// chain_offset(step, n) places further on (wrapping around at n). The offset changes from step to
// step, so within a few dozen steps every element depends on every element of the input: a step
// cannot start before the whole previous step has finished, and no thread can run ahead of the
// others. 0 for n <= 1 (an element is its own partner).
PIPELINE_HOST_DEVICE inline size_t chain_offset(int step, size_t n) {
  uint64_t h = uint64_t(uint32_t(step)) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return n > 1 ? size_t(1 + h % uint64_t(n - 1)) : 0;
}

// The work per element and step, fixed by the contract: a few integer instructions, a bijection
// of `self` for any partner, so that no value collapses as the steps go on.
PIPELINE_HOST_DEVICE inline uint32_t chain_mix(uint32_t self, uint32_t partner, int step) {
  const uint32_t x = self ^ ((partner << 7) | (partner >> 25));
  return x * 0x2C1B3C6Du + uint32_t(step) * 0x9E3779B9u + 1u;
}

// Element i after step `step`, from the array `previous` the step before it left (n elements).
// Call this (or chain_offset and chain_mix) in your kernel; do not reimplement it.
PIPELINE_HOST_DEVICE inline uint32_t chain_element(const uint32_t* previous, size_t i, size_t n, int step) {
  size_t partner = i + chain_offset(step, n);
  if (partner >= n) partner -= n;
  return chain_mix(previous[i], previous[partner], step);
}

// Runs `steps` steps of the chain: x_0 = d_in, x_{s+1}[i] = chain_element(x_s, i, n, s) for
// s = 0 .. steps-1, and leaves x_steps in d_out[0..n).
//
// - d_in: n elements, an input: it must come back unchanged. d_out: n elements, written.
//   d_work: n elements of device workspace, junk on entry, yours during the call. The three do
//   not overlap; all are 256-byte aligned.
// - n may be 0 or up to 2^24; steps may be 0 (d_out is then a copy of d_in) or up to 4096.
// - Each step is a few instructions per element over a small array: the cases that are timed
//   run hundreds of steps over tens of thousands of elements, so the time goes to launching the
//   steps, not to computing them.
// - The result must be complete when the work the call queued on `stream` has finished. You may
//   keep state between calls in `static`s (streams, an instantiated CUDA graph) and return before
//   the work finishes. The checks call again with the same pointers, sizes and stream and new
//   contents in d_in (every timed call does), and with other pointers and sizes: every call must
//   read d_in as it is when the call's work runs, and must give the answer for its own arguments.
extern "C" void mix_chain(const uint32_t* d_in, uint32_t* d_out, uint32_t* d_work, size_t n, int steps,
                          cudaStream_t stream);
