// Lab 06 benchmark: the reference solution beside cub::DeviceScan::InclusiveSum (the library
// anchor) and the chapter's kernels, with GB/s (2 x 4 bytes per element: one read, one
// write) and % of the device's measured read bandwidth, at the sizes of datasets/06-scan.yaml's
// performance cases. Not a test: it prints numbers for people to read.
#include "cub_scan.cuh"
#include "scan.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>


#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

using labkit::DeviceBuffer;
using u32 = uint32_t;
constexpr int chapter_block_dim = 1024;
constexpr int chapter_block_items = 2 * chapter_block_dim;

// GPU Gems 3, ch. 39.2.3: one padding word after every 32, so the tree's strided accesses
// spread over the 32 banks instead of piling onto a few.
template <bool padded>
__device__ __forceinline__ int bank_slot(int i) {
  return padded ? i + (i >> 5) : i;
}

// The chapter's Blelloch scan (scan_v2) of one 2048-element block per thread block; when
// `block_sums` is given, each block also writes its total there (step 1 of the global scan).
// Scanning in place (in == out) is fine: a block reads its elements before writing them.
template <bool padded>
__global__ void chapter_blelloch_block_kernel(const u32* in, size_t n, u32* out, u32* block_sums) {
  __shared__ u32 s[chapter_block_items + chapter_block_items / 32];
  const int tid = threadIdx.x;
  const size_t base = size_t(blockIdx.x) * chapter_block_items;
  const size_t first = base + tid, second = base + tid + chapter_block_dim;
  s[bank_slot<padded>(tid)] = first < n ? in[first] : 0u;
  s[bank_slot<padded>(tid + chapter_block_dim)] = second < n ? in[second] : 0u;

  int offset = 1;
  for (; offset < chapter_block_items; offset <<= 1) {
    __syncthreads();
    const int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
    if (b < chapter_block_items) s[bank_slot<padded>(b)] += s[bank_slot<padded>(a)];
  }
  for (offset >>= 1; offset > 0; offset >>= 1) {
    __syncthreads();
    const int a = offset * (2 * tid + 2) - 1, b = offset * (2 * tid + 3) - 1;
    if (b < chapter_block_items) s[bank_slot<padded>(b)] += s[bank_slot<padded>(a)];
  }
  __syncthreads();
  if (first < n) out[first] = s[bank_slot<padded>(tid)];
  if (second < n) out[second] = s[bank_slot<padded>(tid + chapter_block_dim)];
  if (block_sums != nullptr && tid == 0) block_sums[blockIdx.x] = s[bank_slot<padded>(chapter_block_items - 1)];
}

// Step 3 of the global scan: block b > 0 adds the scanned sum of blocks 0..b-1.
__global__ void chapter_add_block_offsets_kernel(u32* out, size_t n, const u32* scanned_block_sums) {
  const size_t block = size_t(blockIdx.x) + 1;
  const u32 offset = scanned_block_sums[block - 1];
  for (size_t i = block * chapter_block_items + threadIdx.x; i < min(n, (block + 1) * chapter_block_items);
       i += chapter_block_dim)
    out[i] += offset;
}

size_t chapter_blocks(size_t n) { return (n + chapter_block_items - 1) / chapter_block_items; }

// The chapter's global scan: scan each block and keep its total, scan the totals (the same
// way, recursively, when there are more than one block's worth), add them back.
template <bool padded>
void chapter_global_scan(const u32* in, size_t n, u32* out, u32* scratch, cudaStream_t stream) {
  const size_t blocks = chapter_blocks(n);
  chapter_blelloch_block_kernel<padded>
      <<<unsigned(blocks), chapter_block_dim, 0, stream>>>(in, n, out, blocks > 1 ? scratch : nullptr);
  if (blocks == 1) return;
  chapter_global_scan<padded>(scratch, blocks, scratch, scratch + blocks, stream);
  chapter_add_block_offsets_kernel<<<unsigned(blocks - 1), chapter_block_dim, 0, stream>>>(out, n, scratch);
}

size_t chapter_scratch_words(size_t n) {
  size_t words = 0;
  for (size_t level = chapter_blocks(n); level > 1; level = chapter_blocks(level)) words += level;
  return words + 1;
}

struct Variant {
  const char* name;
  std::function<void(const u32*, size_t, u32*, cudaStream_t)> run;
};

std::vector<Variant> variants(CubInclusiveSum& cub, DeviceBuffer<u32>& chapter_scratch) {
  return {
      {"reference solution",
       [](const u32* in, size_t n, u32* out, cudaStream_t stream) {
         inclusive_scan(reinterpret_cast<const int32_t*>(in), n, reinterpret_cast<int32_t*>(out), stream);
       }},
      {"cub::InclusiveSum",
       [&cub](const u32* in, size_t n, u32* out, cudaStream_t stream) {
         cub(reinterpret_cast<const int32_t*>(in), n, reinterpret_cast<int32_t*>(out), stream);
       }},
      {"chapter: global scan+pad",
       [&chapter_scratch](const u32* in, size_t n, u32* out, cudaStream_t stream) {
         chapter_global_scan<true>(in, n, out, chapter_scratch.data(), stream);
       }},
      {"chapter: global scan",
       [&chapter_scratch](const u32* in, size_t n, u32* out, cudaStream_t stream) {
         chapter_global_scan<false>(in, n, out, chapter_scratch.data(), stream);
       }},
      // One block, as the chapter launches it: it scans the first 2048 elements only, so its
      // output is wrong for these sizes; the row shows what one launch of it costs.
      {"chapter: single block",
       [](const u32* in, size_t n, u32* out, cudaStream_t stream) {
         chapter_blelloch_block_kernel<false><<<1, chapter_block_dim, 0, stream>>>(in, n, out, nullptr);
       }},
  };
}

void bench_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  const std::vector<int32_t> values = labkit::generate<int32_t>(n, c.input);
  const std::vector<u32> host(values.begin(), values.end());
  std::vector<u32> expected(n);
  u32 sum = 0;
  for (size_t i = 0; i < n; ++i) expected[i] = sum += host[i];

  DeviceBuffer<u32> input(host);
  DeviceBuffer<u32> output(n);
  CubInclusiveSum cub(n);
  DeviceBuffer<u32> chapter_scratch(chapter_scratch_words(n));

  for (const Variant& v : variants(cub, chapter_scratch)) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(input.data(), n, output.data(), stream); },
         [&](int) { output.poison(); }});
    const bool right = output.download() == expected;
    const double gbps = labkit::gigabytes_per_second(2.0 * sizeof(u32) * double(n), t.ms.median);
    std::printf("%-10s %-26s %10.4f ms %9.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n", c.name.c_str(), v.name,
                t.ms.median, gbps, 100 * gbps / peak_gbps, t.ms.count, 100 * t.ms.relative_error,
                right ? "" : "  WRONG OUTPUT");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  const double peak = labkit::start_benchmark(" (GB/s below count one read and one write of each element)");
  for (const labkit::Case& c : cases) bench_case(c, peak);
  return 0;
}
