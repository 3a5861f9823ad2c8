// The chapter's shared-memory histogram (chapter-histogram), honest in every call, but one
// call in each timed case takes 2.5 s longer: a one-thread kernel spins that long on the
// stream it was handed before the count starts. Its time is real, reported and confirmed; it
// only scatters the samples. Among ten samples of 0.6 ms, one of 2500 ms puts the mean near
// 250 ms and its standard error near 250 ms too: a relative error of about 1, so a noise
// allowance of three standard errors would multiply the ratio by 4 in the student's favour,
// worth some 15 more points here.
//
// The grader stops the slow call at its limit for the case (1 s here: far past any credit) and
// counts it as that long, the median ignores one sample in ten, and the allowance comes from
// the median's spread, capped at 5%: this earns what the chapter's kernel earns, no more.
#include "histogram.h"

#include <cstdint>

namespace {

constexpr int bin_count = 256;
constexpr int threads_per_block = 256;
static_assert(threads_per_block == bin_count,
              "one thread per bin: each thread zeroes and merges exactly one shared bin");

// Timed cases read 100 MiB or more; the correctness cases call with that much at most four
// times. One process serves the checks and every timed case, and a timed case makes two
// warm-up calls and at least ten samples: twelve calls in a row or more, so one large call in
// every ten lands on at least one sample of each case, wherever the cases begin.
constexpr size_t timed_sizes = size_t(1) << 26;
constexpr int slow_every = 10;
constexpr std::uint64_t slow_ns = 2'500'000'000ull;  // half the 5 s a call may take

__global__ void spin_kernel(std::uint64_t ns) {
  std::uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  while (now - start < ns);
}

__global__ void histogram_shared_privatized_kernel(const uint8_t* in, size_t n, uint32_t* bins) {
  __shared__ uint32_t block_bins[bin_count];
  block_bins[threadIdx.x] = 0;
  __syncthreads();

  size_t i = threadIdx.x + blockIdx.x * size_t(blockDim.x);
  const size_t stride = size_t(blockDim.x) * gridDim.x;
  while (i < n) {
    atomicAdd(&block_bins[in[i]], 1u);
    i += stride;
  }
  __syncthreads();

  atomicAdd(&bins[threadIdx.x], block_bins[threadIdx.x]);
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  static int large_calls = 0;
  if (n >= timed_sizes && ++large_calls % slow_every == 0) spin_kernel<<<1, 1, 0, stream>>>(slow_ns);

  cudaMemsetAsync(d_bins, 0, bin_count * sizeof(uint32_t), stream);
  int device = 0;
  int sm_count = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  histogram_shared_privatized_kernel<<<2 * sm_count, threads_per_block, 0, stream>>>(d_in, n, d_bins);
}
