// Lab 10 benchmark: the reference solution beside cub::DeviceMergeSort::SortKeys (the
// comparison-sort anchor), cub::DeviceRadixSort::SortKeys (for context: a sort that does not
// compare keys) and the chapter's cdp_simple_quicksort ported to CDP2 (the lab's starter), in
// Gkeys/s, at the sizes and inputs of datasets/10-quicksort.yaml's performance and benchmark
// cases: random keys, few distinct values, and the inputs that defeat a naive pivot (sorted,
// reversed, organ pipe), each as the checks draw it. GB/s counts 8 bytes per key (one read and
// one write of every key, the least any sort moves), with % of the device's measured read
// bandwidth. Not a test: it prints numbers for people to read.
//
// The chapter's kernel runs up to 2^20 keys only. At 2^24 one thread partitions all 2^24 keys
// at the first level, and segments that reach MAX_DEPTH still hold ~10^5 keys, which one
// thread selection-sorts: it does not finish in minutes. Its ratio on the first larger case of
// the same distribution is therefore at least (its time on the largest case it ran x the ratio
// of their sizes) / (the reference's time): the lower bound printed below.
#include "cub_merge_sort.cuh"
#include "organ_pipe.h"
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
constexpr size_t chapter_max_keys = size_t(1) << 20;  // past this, the chapter's kernel takes minutes

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

// The chapter's kernel launches a tree of up to 2^17 one-thread grids, more than the device
// runtime's default pool of pending launches. A larger pool may slow every launch from the
// device (docs/design/10-quicksort.md), so the pool is raised for the chapter's rows alone, and
// the other rows run with what the process had.
constexpr size_t chapter_pending_launches = size_t(1) << 17;

class PendingLaunches {
 public:
  explicit PendingLaunches(size_t wanted) {
    if (wanted == 0) return;
    CUDA_CHECK(cudaDeviceGetLimit(&saved_, cudaLimitDevRuntimePendingLaunchCount));
    CUDA_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, wanted));
  }
  ~PendingLaunches() {
    if (saved_ != 0) cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, saved_);
  }
  PendingLaunches(const PendingLaunches&) = delete;
  PendingLaunches& operator=(const PendingLaunches&) = delete;

 private:
  size_t saved_ = 0;
};

// One row: `run` sorts `n` keys; the result is read from `result` afterwards.
struct Variant {
  const char* name;
  std::function<void(cudaStream_t)> run;
  const DeviceBuffer<u32>* result;
  bool slow = false;  // few samples: the chapter's kernel
};

struct CaseTimes {
  double reference_ms = 0;
  double chapter_ms = 0;  // 0: the chapter's kernel did not run
};

CaseTimes bench_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  std::vector<u32> input = labkit::generate<u32>(n, c.input);
  if (organ_pipe::wanted(c)) input = organ_pipe::arrange(std::move(input));
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
  if (n <= chapter_max_keys)
    variants.push_back({"chapter: 1 thread/segment",
                        [&](cudaStream_t s) { chapter_quicksort_kernel<<<1, 1, 0, s>>>(keys.data(), 0, int(n) - 1, 0); },
                        &keys, true});

  CaseTimes times;
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    labkit::StoppingRule rule;
    if (v.slow) rule = {0.05, 3, 10, 5.0};
    const PendingLaunches pending(v.slow ? chapter_pending_launches : 0);
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
    std::printf("%-27s %-26s %11.4f ms %8.3f Gkeys/s %8.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n",
                c.name.c_str(), v.name, t.ms.median, gkeys, gbps, 100 * gbps / peak_gbps, t.ms.count,
                100 * t.ms.relative_error, right ? "" : "  WRONG OUTPUT");
    if (i == 0) times.reference_ms = t.ms.median;  // the reference is the first row
    if (v.slow) times.chapter_ms = t.ms.median;
  }
  return times;
}

// The chapter's kernel's time on the largest case it ran, and the first larger case of the same
// distribution, where it did not: sorting takes at least linear time, so scaling its time by the
// sizes' ratio bounds what it would have taken there.
struct ChapterBound {
  const labkit::Case* ran = nullptr;
  double chapter_ms = 0;
  const labkit::Case* beyond = nullptr;
  double reference_ms = 0;

  void add(const labkit::Case& c, const CaseTimes& times) {
    if (times.chapter_ms > 0) {
      ran = &c;
      chapter_ms = times.chapter_ms;
    } else if (ran != nullptr && beyond == nullptr && c.input.distribution == ran->input.distribution) {
      beyond = &c;
      reference_ms = times.reference_ms;
    }
  }

  void print() const {
    if (beyond == nullptr) return;
    const double size_ratio = double(beyond->n) / double(ran->n);
    std::printf("chapter's kernel on %s: not run (one-thread selection sorts of ~10^5 keys past MAX_DEPTH); the "
                "reference is at least %.0fx faster (chapter's time on %s x %.0f / reference's time on %s)\n",
                beyond->name.c_str(), chapter_ms * size_ratio / reference_ms, ran->name.c_str(), size_ratio,
                beyond->name.c_str());
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  const double peak = labkit::start_benchmark(" (GB/s below count 8 bytes per key: one read and one write)");
  ChapterBound bound;
  for (const labkit::Case& c : cases) bound.add(c, bench_case(c, peak));
  bound.print();
  return 0;
}
