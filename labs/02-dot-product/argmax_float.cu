// Lab 02, part 2 starter: arg-max over floats, with the atomic it needs built from atomicCAS.
//
// CUDA has no atomicMax for float, nor one that updates a value and its index together. So
// each thread packs its element into one 64-bit candidate that orders the way the contract
// does (the float turned into an unsigned key in the high half, the inverted index in the low
// half) and merges it into one global word with a compare-and-swap loop.
//
// It is correct, and slow: every one of the n threads runs the loop on the same word, and the
// GPU serves atomics on one address one at a time, so n of them form a queue however many SMs
// there are. The README's part 2 explains the loop and what to do about the queue.
#include "dot.h"

namespace {

using u64 = unsigned long long;  // the type 64-bit atomicCAS takes

constexpr int threads_per_block = 256;

// An unsigned key whose order is the floats' order: a negative float's bits are flipped whole
// (a larger magnitude is a smaller value), a positive float's sign bit is set (every positive
// above every negative). Adding +0.0f first turns -0.0f into +0.0f, so the two zeros tie.
__device__ __forceinline__ uint32_t ordered_key(float value) {
  const uint32_t bits = __float_as_uint(value + 0.0f);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// High half: the key. Low half: the complement of the index, so the smaller index wins a tie.
// Every candidate is above 0 (the smallest key, -infinity's, is 0x007FFFFF).
__device__ __forceinline__ u64 pack_candidate(float value, uint32_t index) {
  return (u64(ordered_key(value)) << 32) | u64(~index);
}

// atomicMax on a 64-bit word, built from atomicCAS: compute the new word from the one seen,
// and try to swap it in; if another thread changed the word in between, the CAS fails and
// returns what the word holds now, which the next try starts from.
__device__ void atomic_max_by_cas(u64* address, u64 candidate) {
  u64 observed = *address;
  u64 assumed;
  do {
    assumed = observed;
    observed = atomicCAS(address, assumed, max(assumed, candidate));
  } while (observed != assumed);
}

__global__ void argmax_cas_per_element_kernel(const float* in, size_t n, u64* best) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) atomic_max_by_cas(best, pack_candidate(in[i], uint32_t(i)));
}

__global__ void unpack_index_kernel(const u64* best, int64_t* index) { *index = int64_t(~uint32_t(*best)); }

// Scratch word for the packed candidate, one per device ordinal in use.
u64* packed_scratch() {
  static u64* scratch[64] = {};
  int device = 0;
  cudaGetDevice(&device);
  if (scratch[device] == nullptr) cudaMalloc(&scratch[device], sizeof(u64));
  return scratch[device];
}

}  // namespace

extern "C" void argmax_float(const float* d_in, size_t n, int64_t* d_index, cudaStream_t stream) {
  u64* best = packed_scratch();
  cudaMemsetAsync(best, 0, sizeof(u64), stream);  // below every candidate
  const size_t blocks = (n + threads_per_block - 1) / threads_per_block;
  argmax_cas_per_element_kernel<<<blocks, threads_per_block, 0, stream>>>(d_in, n, best);
  unpack_index_kernel<<<1, 1, 0, stream>>>(best, d_index);
}
