// Lab 02 benchmark: the reference dot product beside CUB (the library anchor) and the
// chapter's kernel, with GB/s and % of the device's measured read bandwidth, at the sizes of
// datasets/02-dot-product.yaml's performance cases. Not a test: it prints numbers for people
// to read.
//
// Two CUB figures: TransformReduce over the products a[i] * b[i] does the lab's exact job;
// Sum over one array of 2n ints reads the same bytes with the simplest possible access
// pattern, the ceiling a reduction can hope for. Part 2's cases (argmax_float) time the
// reference beside cub::DeviceReduce::ArgMax, the starter's CAS loop per element and the same
// loop once per warp (the README's first step).
#include "cub_dot.cuh"
#include "dot.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/cuda_check.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <cub/device/device_reduce.cuh>

#include <cstdio>
#include <functional>
#include <vector>

namespace {

using labkit::DeviceBuffer;

// The chapter's kernel with both of its flaws repaired (threads past n contribute zero
// and still reach the barrier; blocks combine with atomicAdd), at any block size up to 256.
__global__ void chapter_repaired_kernel(const int32_t* a, const int32_t* b, size_t n, unsigned long long* result) {
  __shared__ long long products[256];
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  products[threadIdx.x] = i < n ? (long long)a[i] * b[i] : 0;
  __syncthreads();
  if (threadIdx.x != 0) return;
  long long block_sum = 0;
  for (unsigned t = 0; t < blockDim.x; ++t) block_sum += products[t];
  atomicAdd(result, (unsigned long long)block_sum);
}

using Run = std::function<void(const int32_t*, const int32_t*, size_t, int64_t*, cudaStream_t)>;

struct Variant {
  const char* name;
  Run run;
  bool computes_dot = true;  // false for the ceiling, which sums other numbers
};

Run chapter_repaired(int threads_per_block) {
  return [threads_per_block](const int32_t* a, const int32_t* b, size_t n, int64_t* result, cudaStream_t stream) {
    cudaMemsetAsync(result, 0, sizeof(int64_t), stream);
    const size_t blocks = (n + threads_per_block - 1) / threads_per_block;
    chapter_repaired_kernel<<<blocks, threads_per_block, 0, stream>>>(a, b, n,
                                                                     reinterpret_cast<unsigned long long*>(result));
  };
}

// Scratch for the ceiling's cub::DeviceReduce::Sum over 2n ints.
size_t sum_scratch_bytes(size_t n) {
  size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const int32_t*>(nullptr), static_cast<int64_t*>(nullptr),
                         int64_t(2 * n));
  return bytes;
}

std::vector<Variant> variants(CubDot& cub, DeviceBuffer<uint8_t>& scratch) {
  return {
      {"reference solution", dot},
      {"cub TransformReduce a*b", std::ref(cub)},
      {"cub Sum, 2n ints (ceiling)",
       [&scratch](const int32_t* a, const int32_t*, size_t n, int64_t* result, cudaStream_t stream) {
         // a and b are the two halves of one buffer: reads the same bytes, answer differs.
         size_t bytes = scratch.size();
         cub::DeviceReduce::Sum(scratch.data(), bytes, a, result, int64_t(2 * n), stream);
       },
       false},
      {"chapter, repaired, 256 thr", chapter_repaired(256)},
      {"chapter, repaired, 32 thr", chapter_repaired(32)},
  };
}

// b is drawn like a, from the next seed.
labkit::InputSpec second_array(const labkit::Case& c) {
  labkit::InputSpec spec = c.input;
  ++spec.seed;
  return spec;
}

void bench_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  // One allocation holding a then b, so "cub Sum" can read both as one array.
  const auto a = labkit::generate<int32_t>(n, c.input);
  const auto b = labkit::generate<int32_t>(n, second_array(c));
  std::vector<int32_t> both(a);
  both.insert(both.end(), b.begin(), b.end());
  int64_t expected = 0;
  for (size_t i = 0; i < n; ++i) expected += int64_t(a[i]) * b[i];

  DeviceBuffer<int32_t> inputs(both);
  DeviceBuffer<int64_t> result(1);
  CubDot cub(n);
  DeviceBuffer<uint8_t> sum_scratch(sum_scratch_bytes(n));
  const double bytes_read = 2.0 * sizeof(int32_t) * double(n);

  for (const Variant& v : variants(cub, sum_scratch)) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(inputs.data(), inputs.data() + n, n, result.data(), stream); },
         [&](int) { result.poison(); }});
    const bool right = !v.computes_dot || result.download()[0] == expected;
    const double gbps = labkit::gigabytes_per_second(bytes_read, t.ms.median);
    std::printf("%-12s %-28s %9.4f ms %8.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n", c.name.c_str(),
                v.name, t.ms.median, gbps, 100 * gbps / peak_gbps, t.ms.count, 100 * t.ms.relative_error,
                right ? "" : "  WRONG OUTPUT");
  }
}

// ---- Part 2, argmax_float ---------------------------------------------------------------

using u64 = unsigned long long;

__device__ u64 packed_candidate(float value, uint32_t index) {
  const uint32_t bits = __float_as_uint(value + 0.0f);
  const uint32_t key = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return (u64(key) << 32) | u64(~index);
}

// The starter's loop (argmax_float.cu): atomicMax built from atomicCAS.
__device__ void atomic_max_by_cas(u64* address, u64 candidate) {
  u64 observed = *address, assumed;
  do {
    assumed = observed;
    observed = atomicCAS(address, assumed, max(assumed, candidate));
  } while (observed != assumed);
}

// One element per thread; per_warp: the warp's best by shuffles first, lane 0's CAS loop alone.
template <bool per_warp>
__global__ void cas_argmax_kernel(const float* in, size_t n, u64* best) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  u64 candidate = i < n ? packed_candidate(in[i], uint32_t(i)) : 0;
  if (per_warp) {
    for (int offset = 16; offset > 0; offset /= 2) candidate = max(candidate, __shfl_down_sync(0xFFFFFFFFu, candidate, offset));
    if (threadIdx.x % 32 != 0) return;
  }
  if (candidate != 0) atomic_max_by_cas(best, candidate);
}

__global__ void unpack_kernel(const u64* best, int64_t* index) { *index = int64_t(~uint32_t(*best)); }

using FloatRun = std::function<void(const float*, size_t, int64_t*, cudaStream_t)>;

template <bool per_warp>
FloatRun cas_argmax(DeviceBuffer<u64>& word) {
  return [&word](const float* in, size_t n, int64_t* index, cudaStream_t stream) {
    cudaMemsetAsync(word.data(), 0, sizeof(u64), stream);
    cas_argmax_kernel<per_warp><<<(n + 255) / 256, 256, 0, stream>>>(in, n, word.data());
    unpack_kernel<<<1, 1, 0, stream>>>(word.data(), index);
  };
}

__device__ float ascending_value(uint32_t key) { return __uint_as_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key); }

__global__ void ascending_kernel(float* out, size_t n, uint32_t first_key) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = ascending_value(first_key + uint32_t(i));
}

void bench_argmax_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  DeviceBuffer<float> in(n);
  if (c.has("pattern")) {  // ascending: consecutive floats from -1.0f up (the checks draw where they start)
    ascending_kernel<<<1024, 256>>>(in.data(), n, 0x407FFFFFu);
  } else {
    in.upload(labkit::generate<float>(n, c.input));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  DeviceBuffer<int64_t> index(1), expected(1);
  DeviceBuffer<u64> word(1);
  CubArgmax cub(n);
  argmax_float(in.data(), n, expected.data(), nullptr);
  const int64_t right_index = expected.download()[0];
  std::vector<std::pair<const char*, FloatRun>> runs = {
      {"reference solution", argmax_float},
      {"cub ArgMax", std::ref(cub)},
      {"CAS loop per warp", cas_argmax<true>(word)},
  };
  // On ascending input every element's CAS wins and every one behind it retries: the starter's
  // loop runs for minutes there, so the benchmark times it on random input only.
  if (!c.has("pattern")) runs.push_back({"CAS loop per element (starter)", cas_argmax<false>(word)});
  for (const auto& named : runs) {
    const char* name = named.first;
    const FloatRun& run = named.second;
    // The CAS loops take tens of milliseconds to seconds a call: three samples tell that much.
    labkit::StoppingRule rule;
    rule.min_samples = 3;
    rule.max_seconds = 1.0;
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { run(in.data(), n, index.data(), stream); }, [&](int) { index.poison(); }}, rule);
    const bool right = index.download()[0] == right_index;
    const double gbps = labkit::gigabytes_per_second(sizeof(float) * double(n), t.ms.median);
    std::printf("%-27s %-31s %9.4f ms %8.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n", c.name.c_str(), name,
                t.ms.median, gbps, 100 * gbps / peak_gbps, t.ms.count, 100 * t.ms.relative_error,
                right ? "" : "  WRONG OUTPUT");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  const double peak = labkit::start_benchmark("; GB/s counts the 8 bytes read per element");
  for (const labkit::Case& c : cases)
    if (c.has("exercise") && c.params.at("exercise") == "argmax_float")
      bench_argmax_case(c, peak);
    else
      bench_case(c, peak);
  return 0;
}
