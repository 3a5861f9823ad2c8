// Lab 09 benchmark: the reference solution beside cub::DeviceRadixSort::SortKeys (the library
// anchor) and the chapter's warp-level split sort, in Gkeys/s, and in GB/s counting what an
// LSD sort with 8-bit digits must move (four passes, each reading and writing every key: 32
// bytes per key), with % of the device's measured read bandwidth, at the sizes of
// datasets/09-radix-sort.yaml's performance cases. Not a test: it prints numbers for people to
// read.
#include "sort.h"

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
constexpr int warp_size = 32;
constexpr int chapter_threads = 256;
constexpr int chapter_warps = chapter_threads / warp_size;
constexpr double bytes_per_key = 4 * 2 * sizeof(u32);  // four passes, one read and one write each

// The chapter's warp-level split sort (the lab's starter): 32 splits by one bit, each a
// __ballot_sync and a __popc. Each warp sorts its own run of 32 keys, so for n > 32 the output
// is only sorted run by run; the row shows what the chapter's kernel costs, not a sort.
__global__ void chapter_warp_split_sort_kernel(u32* keys, size_t n) {
  __shared__ u32 s_data[chapter_warps][2][warp_size];
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const size_t i = (size_t(blockIdx.x) * chapter_warps + warp) * warp_size + lane;
  const bool has_key = i < n;
  u32 key = has_key ? keys[i] : 0u;
  const unsigned active = __ballot_sync(0xffffffffu, has_key);
  const unsigned below = (1u << lane) - 1u;
  int buffer = 0;
  for (int bit = 0; bit < 32; ++bit) {
    const bool is_one = (key >> bit) & 1u;
    const unsigned ones = __ballot_sync(0xffffffffu, has_key && is_one);
    const unsigned zeros = active & ~ones;
    const int position = is_one ? __popc(zeros) + __popc(ones & below) : __popc(zeros & below);
    if (has_key) s_data[warp][buffer][position] = key;
    __syncwarp();
    if (has_key) key = s_data[warp][buffer][lane];
    buffer ^= 1;
  }
  if (has_key) keys[i] = key;
}

void chapter_warp_split_sort(u32* keys, size_t n, cudaStream_t stream) {
  const size_t warps = (n + warp_size - 1) / warp_size;
  chapter_warp_split_sort_kernel<<<unsigned((warps + chapter_warps - 1) / chapter_warps), chapter_threads, 0,
                                   stream>>>(keys, n);
}

size_t cub_temp_bytes(size_t n) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, bytes, static_cast<const u32*>(nullptr), static_cast<u32*>(nullptr), int(n));
  return bytes;
}

// One row: `run` sorts `n` keys; the result is read from `result` afterwards.
struct Variant {
  const char* name;
  std::function<void(cudaStream_t)> run;
  const DeviceBuffer<u32>* result;
};

void bench_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  const std::vector<u32> input = labkit::generate<u32>(n, c.input);
  std::vector<u32> expected = input;
  std::sort(expected.begin(), expected.end());

  const DeviceBuffer<u32> pristine(input);
  DeviceBuffer<u32> keys(n);       // sorted in place (reference, chapter)
  DeviceBuffer<u32> cub_out(n);    // CUB sorts out of place, from `keys`
  DeviceBuffer<uint8_t> temp(radix_sort_temp_bytes(n));
  DeviceBuffer<uint8_t> cub_temp(cub_temp_bytes(n));

  const std::vector<Variant> variants = {
      {"reference solution",
       [&](cudaStream_t stream) { radix_sort(keys.data(), n, temp.data(), temp.size(), stream); }, &keys},
      {"cub::DeviceRadixSort",
       [&](cudaStream_t stream) {
         size_t bytes = cub_temp.size();
         cub::DeviceRadixSort::SortKeys(cub_temp.data(), bytes, keys.data(), cub_out.data(), int(n), 0, 32, stream);
       },
       &cub_out},
      // Sorts each run of 32 only: its output is wrong for these sizes.
      {"chapter: warp split (32)", [&](cudaStream_t stream) { chapter_warp_split_sort(keys.data(), n, stream); },
       &keys},
  };

  for (const Variant& v : variants) {
    const labkit::TimingStats t = labkit::time_call(
        {v.run, [&](int) {
           CUDA_CHECK(cudaMemcpy(keys.data(), pristine.data(), pristine.bytes(), cudaMemcpyDeviceToDevice));
           cub_out.poison();
         }});
    const bool right = v.result->download() == expected;
    const double gkeys = double(n) / (t.ms.median * 1e-3) / 1e9;
    const double gbps = labkit::gigabytes_per_second(bytes_per_key * double(n), t.ms.median);
    std::printf("%-10s %-26s %10.4f ms %8.2f Gkeys/s %9.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n",
                c.name.c_str(),
                v.name, t.ms.median, gkeys, gbps, 100 * gbps / peak_gbps, t.ms.count, 100 * t.ms.relative_error,
                right ? "" : "  WRONG OUTPUT");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  const double peak =
      labkit::start_benchmark(" (GB/s below count 32 bytes per key: 4 passes, each reading and writing every key)");
  for (const labkit::Case& c : cases) bench_case(c, peak);
  return 0;
}
