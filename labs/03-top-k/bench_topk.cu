// Lab 03 benchmark: the reference solution beside a full cub::DeviceRadixSort descending sort
// (the library anchor: the obvious way to get the top k), the chapter's kernel at k = 10 and
// a kernel that only reads the input (the floor for any top-k, which must read all of it),
// with GB/s (n * 4 bytes over the time) and % of the device's measured read bandwidth, at the
// n and k of datasets/03-top-k.yaml's performance cases. Part 2's cases (`memory: managed`):
// the reference's topk_managed (a prefetch, then its topk) beside the other ways to place a
// managed input whose pages start on the host, each before the same topk: none (the kernel
// faults the pages across, as part 2's starter does), an explicit copy into device memory,
// cudaMemAdviseSetAccessedBy (the GPU reads the host's pages in place), read-mostly advice and
// a prefetch, and the input already in device memory for scale. Every managed sample starts
// from managed memory reset and then written by the CPU, as the grader's calls do. Not a test:
// it prints numbers for people to read.
#include "cub_sort_topk.cuh"
#include "managed_topk.cuh"
#include "topk.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/managed_memory.h>
#include <labkit/read_only.cuh>
#include <labkit/timing.h>

#include <cub/version.cuh>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

using labkit::DeviceBuffer;
constexpr int chapter_block_size = 256;
constexpr int chapter_k = 10;

// The chapter's kernel as it wrote it: compile-time K, a sorted array per thread, a tree
// merge of BLOCK_SIZE * K values in shared memory, and its insertion routine (which drops
// values equal to one already held, so its answers are wrong on repeated values).
__device__ void chapter_insert_value(int32_t* array, int k, int32_t data) {
  for (int i = 0; i < k; ++i)
    if (array[i] == data) return;
  if (data < array[k - 1]) return;
  for (int i = k - 2; i >= 0; --i) {
    if (data > array[i]) {
      array[i + 1] = array[i];
    } else {
      array[i + 1] = data;
      return;
    }
  }
  array[0] = data;
}

template <int K>
__global__ void chapter_topk_kernel(const int32_t* input, size_t count, int32_t* output) {
  __shared__ int32_t topk_per_block[chapter_block_size * K];
  int32_t topk_temp[K];
  for (int i = 0; i < K; ++i) topk_temp[i] = INT_MIN;
  for (size_t idx = threadIdx.x + size_t(blockDim.x) * blockIdx.x; idx < count; idx += size_t(gridDim.x) * blockDim.x)
    chapter_insert_value(topk_temp, K, input[idx]);
  for (int i = 0; i < K; ++i) topk_per_block[threadIdx.x * K + i] = topk_temp[i];
  __syncthreads();
  for (int length = chapter_block_size / 2; length >= 1; length /= 2) {
    if (threadIdx.x < length)
      for (int i = 0; i < K; ++i) chapter_insert_value(topk_temp, K, topk_per_block[(threadIdx.x + length) * K + i]);
    __syncthreads();
    if (threadIdx.x < length)
      for (int i = 0; i < K; ++i) topk_per_block[threadIdx.x * K + i] = topk_temp[i];
    __syncthreads();
  }
  if (threadIdx.x < K) output[size_t(K) * blockIdx.x + threadIdx.x] = topk_per_block[threadIdx.x];
}

using TopkFn = std::function<void(const int32_t*, size_t, int, int32_t*, cudaStream_t)>;

struct Variant {
  std::string name;
  TopkFn run;          // writes the top k to out[0..k) (the sort writes all n)
  bool selects = true;  // false: a yardstick whose output is not a top k
};

// Scratch for the anchors, allocated once per size outside the timed region.
struct Scratch {
  explicit Scratch(size_t n)
      : cub(n),
        chapter_blocks((n + chapter_block_size - 1) / chapter_block_size),
        chapter_results(chapter_blocks * chapter_k) {}
  CubSortTopK cub;
  size_t chapter_blocks;
  DeviceBuffer<int32_t> chapter_results;
};

std::vector<Variant> variants(int k, Scratch& scratch) {
  std::vector<Variant> list = {
      {"reference solution", topk},
      {"cub::DeviceRadixSort (full sort)", std::ref(scratch.cub)},
  };
  if (k == chapter_k)
    list.push_back({"chapter kernel (k = 10)", [&scratch](const int32_t* in, size_t n, int, int32_t* out,
                                                          cudaStream_t stream) {
                      chapter_topk_kernel<chapter_k><<<unsigned(scratch.chapter_blocks), chapter_block_size, 0, stream>>>(
                          in, n, scratch.chapter_results.data());
                      chapter_topk_kernel<chapter_k><<<1, chapter_block_size, 0, stream>>>(
                          scratch.chapter_results.data(), scratch.chapter_blocks * chapter_k, out);
                    }});
  const int sms = labkit::current_device().sm_count;
  list.push_back({"read-only kernel (floor)",
                  [sms](const int32_t* in, size_t n, int, int32_t* out, cudaStream_t stream) {
                    labkit::read_only(in, n * sizeof(int32_t), reinterpret_cast<uint32_t*>(out), sms, stream);
                  },
                  false});
  return list;
}

void bench_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  const int k = int(c.integer("k"));
  std::vector<int32_t> host = labkit::generate<int32_t>(n, c.input);
  DeviceBuffer<int32_t> input(host);
  std::nth_element(host.begin(), host.begin() + (k - 1), host.end(), std::greater<int32_t>());
  std::sort(host.begin(), host.begin() + k, std::greater<int32_t>());
  const std::vector<int32_t> expected(host.begin(), host.begin() + k);
  DeviceBuffer<int32_t> out{size_t(k)};
  Scratch scratch(n);

  double reference_ms = 0;
  for (const Variant& v : variants(k, scratch)) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(input.data(), n, k, out.data(), stream); },
         [&](int) { CUDA_CHECK(cudaMemset(out.data(), labkit::poison_byte, size_t(k) * sizeof(int32_t))); }});
    std::vector<int32_t> top(static_cast<size_t>(k), 0);
    CUDA_CHECK(cudaMemcpy(top.data(), out.data(), top.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    if (reference_ms == 0) reference_ms = t.ms.median;
    const double gbps = labkit::gigabytes_per_second(double(n) * sizeof(int32_t), t.ms.median);
    std::printf("%-22s %-30s %9.4f ms %8.1f GB/s %6.1f%% of peak  %6.2fx the reference's time  (%zu samples, "
                "+-%.2f%%)%s\n",
                c.name.c_str(), v.name.c_str(), t.ms.median, gbps, 100 * gbps / peak_gbps, t.ms.median / reference_ms,
                t.ms.count, 100 * t.ms.relative_error, !v.selects || top == expected ? "" : "  WRONG OUTPUT");
  }
}

using ManagedVariant = std::function<void(const int32_t* managed_in, size_t n, int k, int32_t* out, cudaStream_t)>;

void bench_managed_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  const int k = int(c.integer("k"));
  std::vector<int32_t> host = labkit::generate<int32_t>(n, c.input);
  DeviceBuffer<int32_t> device_input(host);
  DeviceBuffer<int32_t> out{size_t(k)}, copied(n);
  labkit::ManagedMirror managed(n * sizeof(int32_t));
  std::vector<int32_t> expected = host;
  std::nth_element(expected.begin(), expected.begin() + (k - 1), expected.end(), std::greater<int32_t>());
  std::sort(expected.begin(), expected.begin() + k, std::greater<int32_t>());
  expected.resize(size_t(k));

  const std::vector<std::pair<std::string, ManagedVariant>> list = {
      {"reference: prefetch, then topk", topk_managed},
      {"no prefetch: pages fault across", topk},
      {"cudaMemcpyAsync, then topk", [&copied](const int32_t* in, size_t count, int kk, int32_t* o, cudaStream_t s) {
         copy_then_topk(topk, in, copied.data(), count, kk, o, s);
       }},
      {"AccessedBy advice, then topk", [](const int32_t* in, size_t count, int kk, int32_t* o, cudaStream_t s) {
         advise_for_gpu(in, count, cudaMemAdviseSetAccessedBy);
         topk(in, count, kk, o, s);
       }},
      {"ReadMostly, prefetch, topk", [](const int32_t* in, size_t count, int kk, int32_t* o, cudaStream_t s) {
         advise_for_gpu(in, count, cudaMemAdviseSetReadMostly);
         prefetch_to_gpu(in, count, s);
         topk(in, count, kk, o, s);
       }},
  };
  double reference_ms = 0;
  auto print_row = [&](const std::string& name, const labkit::TimingStats& t, bool right) {
    if (reference_ms == 0) reference_ms = t.ms.median;
    const double gbps = labkit::gigabytes_per_second(double(n) * sizeof(int32_t), t.ms.median);
    std::printf("%-22s %-32s %9.4f ms %8.1f GB/s %6.1f%% of peak  %6.2fx the reference's time  (%zu samples, "
                "+-%.2f%%)%s\n",
                c.name.c_str(), name.c_str(), t.ms.median, gbps, 100 * gbps / peak_gbps, t.ms.median / reference_ms,
                t.ms.count, 100 * t.ms.relative_error, right ? "" : "  WRONG OUTPUT");
  };
  auto poison = [&] { CUDA_CHECK(cudaMemset(out.data(), labkit::poison_byte, size_t(k) * sizeof(int32_t))); };
  for (const auto& [name, run] : list) {
    labkit::TimedCall call{[&, run = run](cudaStream_t stream) {
                             run(static_cast<const int32_t*>(managed.data()), n, k, out.data(), stream);
                           },
                           [&](int) { poison(); }};
    call.stage = [&] { managed.reset(); };
    call.reveal = [&](bool) { managed.fill(host.data()); };
    const labkit::TimingStats t = labkit::time_call(call);
    print_row(name, t, out.download() == expected);
  }
  labkit::TimedCall on_device{[&](cudaStream_t stream) { topk(device_input.data(), n, k, out.data(), stream); },
                              [&](int) { poison(); }};
  const labkit::TimingStats t = labkit::time_call(on_device);
  print_row("device memory: topk alone", t, out.download() == expected);
}

bool managed_case(const labkit::Case& c) {
  const auto it = c.params.find("memory");
  return it != c.params.end() && it->second == "managed";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  const double peak = labkit::start_benchmark();
  std::printf("cub::DeviceTopK: %s (CUB %d.%d.%d)\n",
#if __has_include(<cub/device/device_topk.cuh>)
              "present in this CUB but not benchmarked here",
#else
              "not in this CUB, so the full sort is the library anchor",
#endif
              CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
  for (const labkit::Case& c : cases) managed_case(c) ? bench_managed_case(c, peak) : bench_case(c, peak);
  return 0;
}
