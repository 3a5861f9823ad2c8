// Lab 10 benchmark: the reference solution beside cub::DeviceMergeSort::SortKeys (the
// comparison-sort anchor), cub::DeviceRadixSort::SortKeys (for context: a sort that does not
// compare keys) and the chapter's cdp_simple_quicksort ported to CDP2 (the lab's starter), in
// Gkeys/s, at 2^20 and 2^24 keys, random and few-distinct. GB/s counts 8 bytes per key (one
// read and one write of every key, the least any sort moves), with % of the device's measured
// read bandwidth. Not a test: it prints numbers for people to read.
//
// The chapter's kernel runs at 2^16 and 2^20 only. At 2^24 one thread partitions all 2^24
// keys at the first level, and segments that reach MAX_DEPTH still hold ~10^5 keys, which one
// thread selection-sorts: it does not finish in minutes. Its ratio at 2^24 is therefore at
// least (its 2^20 time x 16) / (the reference's 2^24 time): the lower bound printed below.
#include "cub_merge_sort.cuh"
#include "quicksort.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

using labkit::DeviceBuffer;
using u32 = uint32_t;
constexpr double bytes_per_key = 2 * sizeof(u32);  // one read and one write

// ---- the chapter's kernel, CDP2 port (the lab's starter) --------------------------------

constexpr int chapter_max_depth = 16;
constexpr int chapter_insertion_sort = 32;

__device__ void chapter_selection_sort(u32* data, int left, int right) {
  for (int i = left; i <= right; ++i) {
    u32 min_value = data[i];
    int min_index = i;
    for (int j = i + 1; j <= right; ++j)
      if (data[j] < min_value) min_value = data[min_index = j];
    if (min_index != i) {
      data[min_index] = data[i];
      data[i] = min_value;
    }
  }
}

__global__ void chapter_quicksort_kernel(u32* data, int left, int right, int depth) {
  if (depth >= chapter_max_depth || right - left <= chapter_insertion_sort) {
    chapter_selection_sort(data, left, right);
    return;
  }
  u32* lp = data + left;
  u32* rp = data + right;
  const u32 pivot = data[(left + right) / 2];
  while (lp <= rp) {
    u32 lv = *lp;
    u32 rv = *rp;
    while (lv < pivot) lv = *++lp;
    while (rv > pivot) rv = *--rp;
    if (lp <= rp) {
      *lp++ = rv;
      *rp-- = lv;
    }
  }
  const int left_end = int(rp - data);
  const int right_begin = int(lp - data);
  if (left < left_end) chapter_quicksort_kernel<<<1, 1, 0, cudaStreamFireAndForget>>>(data, left, left_end, depth + 1);
  if (right_begin < right)
    chapter_quicksort_kernel<<<1, 1, 0, cudaStreamFireAndForget>>>(data, right_begin, right, depth + 1);
}

// ---- the library anchors ----------------------------------------------------------------

size_t radix_sort_temp_bytes(size_t n) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, bytes, static_cast<const u32*>(nullptr), static_cast<u32*>(nullptr), int(n));
  return bytes;
}

// One row: `run` sorts `n` keys; the result is read from `result` afterwards.
struct Variant {
  const char* name;
  std::function<void(cudaStream_t)> run;
  const DeviceBuffer<u32>* result;
  bool slow = false;  // few samples: the chapter's kernel
};

double bench_case(const char* label, size_t n, const labkit::InputSpec& spec, bool with_chapter, double peak_gbps,
                  double* chapter_ms) {
  const std::vector<u32> input = labkit::generate<u32>(n, spec);
  std::vector<u32> expected = input;
  std::sort(expected.begin(), expected.end());

  const DeviceBuffer<u32> pristine(input);
  DeviceBuffer<u32> keys(n);     // sorted in place (reference, merge sort, chapter)
  DeviceBuffer<u32> radix_out(n);  // CUB's radix sort writes out of place, from `keys`
  DeviceBuffer<uint8_t> temp(quicksort_temp_bytes(n));
  DeviceBuffer<uint8_t> merge_temp(cub_merge_sort::temp_bytes(n));
  DeviceBuffer<uint8_t> radix_temp(radix_sort_temp_bytes(n));

  std::vector<Variant> variants = {
      {"reference solution", [&](cudaStream_t s) { quicksort(keys.data(), n, temp.data(), temp.size(), s); }, &keys},
      {"cub::DeviceMergeSort",
       [&](cudaStream_t s) { cub_merge_sort::sort(keys.data(), n, merge_temp.data(), merge_temp.size(), s); },
       &keys},
      {"cub::DeviceRadixSort",
       [&](cudaStream_t s) {
         size_t bytes = radix_temp.size();
         cub::DeviceRadixSort::SortKeys(radix_temp.data(), bytes, keys.data(), radix_out.data(), int(n), 0, 32, s);
       },
       &radix_out},
  };
  if (with_chapter)
    variants.push_back({"chapter: 1 thread/segment",
                        [&](cudaStream_t s) { chapter_quicksort_kernel<<<1, 1, 0, s>>>(keys.data(), 0, int(n) - 1, 0); },
                        &keys, true});

  double reference_ms = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    labkit::StoppingRule rule;
    if (v.slow) rule = {0.05, 3, 10, 5.0};
    const labkit::TimingStats t = labkit::time_call(
        {v.run,
         [&](int) {
           CUDA_CHECK(cudaMemcpy(keys.data(), pristine.data(), pristine.bytes(), cudaMemcpyDeviceToDevice));
           radix_out.poison();
         }},
        rule);
    const bool right = v.result->download() == expected;
    const double gkeys = double(n) / (t.ms.median * 1e-3) / 1e9;
    const double gbps = labkit::gigabytes_per_second(bytes_per_key * double(n), t.ms.median);
    std::printf("%-22s %-26s %11.4f ms %8.3f Gkeys/s %8.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n", label,
                v.name, t.ms.median, gkeys, gbps, 100 * gbps / peak_gbps, t.ms.count, 100 * t.ms.relative_error,
                right ? "" : "  WRONG OUTPUT");
    if (i == 0) reference_ms = t.ms.median;  // the reference is the first row
    if (v.slow && chapter_ms != nullptr) *chapter_ms = t.ms.median;
  }
  return reference_ms;
}

}  // namespace

int main() {
  const double peak = labkit::start_benchmark(" (GB/s below count 8 bytes per key: one read and one write)");
  // The chapter's kernel launches a tree of up to 2^17 one-thread grids.
  CUDA_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, size_t(1) << 17));
  const labkit::InputSpec random{labkit::Distribution::uniform, 42, 0.0, 4294967295.0};
  labkit::InputSpec few = random;
  few.distribution = labkit::Distribution::few_distinct;
  few.distinct = 4;

  double chapter_2_20 = 0;
  bench_case("random n = 2^16", size_t(1) << 16, random, true, peak, nullptr);
  bench_case("random n = 2^20", size_t(1) << 20, random, true, peak, &chapter_2_20);
  const double reference_2_24 = bench_case("random n = 2^24", size_t(1) << 24, random, false, peak, nullptr);
  bench_case("few-distinct n = 2^24", size_t(1) << 24, few, false, peak, nullptr);
  std::printf("chapter's kernel at 2^24: not run (one-thread selection sorts of ~10^5 keys past MAX_DEPTH); the "
              "reference is at least %.0fx faster (chapter's 2^20 time x 16 / reference's 2^24 time)\n",
              chapter_2_20 * 16 / reference_2_24);
  return 0;
}
