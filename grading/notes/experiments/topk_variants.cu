// Issue 22 experiment: lab 03's reference (solutions/03-top-k/topk.cu: one cooperative radix
// select with a prefilter bound agreed by all blocks) and a design tried against it
// (topk_sampled.cuh: a sampled threshold, one filtering read, survivors ranked by 64 blocks;
// measured slower at 10^7, see grading/notes/issue22/README.md), beside a full
// cub::DeviceRadixSort::SortKeysDescending of all n keys (the lab's anchor, as in
// labs/03-top-k/cub_sort_topk.cuh).
//   check: both references on many inputs (sizes 1 .. 2^24, k from 1 to n, uniform, all-equal,
//          values mod 3, 0..99, sorted both ways, INT_MIN/INT_MAX heavy, a narrow negative
//          range), each call made twice (the kernels' state alternates between calls), and a
//          misaligned input; compared with std::nth_element + std::sort on the host; d_in must
//          come back unmodified. One line per failure, then "all right" or a count.
//   time:  n = 10^7 (k = 10, 100, 1000) and n = 2^28 (k = 10, 1000), uniform over all int32:
//          per sample a 256 MiB write that flushes L2, events around the one call; median of
//          15 samples; ms and how many times faster than the full sort. Also an empty launch
//          and a read-only kernel over the same input, timed the same way, and which path the
//          sampled reference took (its device state, read back after the samples).
//   once:  each reference once at n = 10^7, k = 10 and k = 1000 (for ncu).
//   nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -Ilabs/03-top-k grading/notes/experiments/topk_variants.cu -o tv
//   tv check | tv time [samples] | tv once
#include "topk.h"

// Everything the two references include, before they are included inside namespaces.
#include <cooperative_groups.h>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

// Each reference defines extern "C" topk and an anonymous namespace: renamed and wrapped.
#define topk previous_topk
namespace previous {
#include "../../../solutions/03-top-k/topk.cu"
}
#undef topk
#define topk sampled_topk
namespace sampled {
#include "topk_sampled.cuh"
}
#undef topk

namespace experiment {

#define CHECK(call) check(call, #call, __LINE__)
void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "line %d: %s: %s\n", line, what, cudaGetErrorString(e));
    std::exit(1);
  }
}

using TopkFn = std::function<void(const int32_t*, size_t, int, int32_t*, cudaStream_t)>;

struct Variant {
  const char* name;
  TopkFn run;
};

// ---- Inputs ----

enum class Distribution { uniform, all_equal, mod3, hundred, ascending, descending, extremes, narrow_negative };
const Distribution all_distributions[] = {Distribution::uniform,   Distribution::all_equal,  Distribution::mod3,
                                          Distribution::hundred,   Distribution::ascending,  Distribution::descending,
                                          Distribution::extremes,  Distribution::narrow_negative};

const char* name_of(Distribution d) {
  switch (d) {
    case Distribution::uniform: return "uniform";
    case Distribution::all_equal: return "all-equal";
    case Distribution::mod3: return "mod3";
    case Distribution::hundred: return "0..99";
    case Distribution::ascending: return "ascending";
    case Distribution::descending: return "descending";
    case Distribution::extremes: return "extremes";
    case Distribution::narrow_negative: return "narrow-negative";
  }
  return "?";
}

std::vector<int32_t> generate(size_t n, Distribution d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> any(INT_MIN, INT_MAX);
  std::vector<int32_t> v(n);
  switch (d) {
    case Distribution::uniform:
    case Distribution::ascending:
    case Distribution::descending:
      for (auto& x : v) x = any(rng);
      if (d == Distribution::ascending) std::sort(v.begin(), v.end());
      if (d == Distribution::descending) std::sort(v.begin(), v.end(), std::greater<int32_t>());
      break;
    case Distribution::all_equal: {
      const int32_t value = any(rng);
      for (auto& x : v) x = value;
      break;
    }
    case Distribution::mod3:
      for (auto& x : v) x = int32_t(uint32_t(any(rng)) % 3u) - 1;
      break;
    case Distribution::hundred:
      for (auto& x : v) x = int32_t(uint32_t(any(rng)) % 100u);
      break;
    case Distribution::extremes:  // 45% INT_MIN, 45% INT_MAX, 10% anything
      for (auto& x : v) {
        const uint32_t pick = uint32_t(any(rng)) % 20u;
        x = pick < 9 ? INT_MIN : pick < 18 ? INT_MAX : any(rng);
      }
      break;
    case Distribution::narrow_negative:  // as the lab's negative-k10 case
      for (auto& x : v) x = INT_MIN + int32_t(uint32_t(any(rng)) % 3649u);
      break;
  }
  return v;
}

// The largest `count` values, largest first.
std::vector<int32_t> top_values(std::vector<int32_t> v, size_t count) {
  std::nth_element(v.begin(), v.begin() + (count - 1), v.end(), std::greater<int32_t>());
  std::sort(v.begin(), v.begin() + count, std::greater<int32_t>());
  v.resize(count);
  return v;
}

struct DeviceInput {
  int32_t* base = nullptr;  // one spare value in front, for the misaligned case
  size_t n = 0;
  explicit DeviceInput(const std::vector<int32_t>& host) : n(host.size()) {
    CHECK(cudaMalloc(&base, (n + 4) * sizeof(int32_t)));
    CHECK(cudaMemcpy(base + 4, host.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice));
  }
  ~DeviceInput() { cudaFree(base); }
  const int32_t* aligned() const { return base + 4; }
};

// ---- check ----

struct Checker {
  std::vector<Variant> variants;
  cudaStream_t stream;
  int32_t* d_out = nullptr;
  size_t out_capacity = 0;
  int failures = 0, runs = 0;

  void ensure_out(size_t k) {
    if (k <= out_capacity) return;
    cudaFree(d_out);
    CHECK(cudaMalloc(&d_out, k * sizeof(int32_t)));
    out_capacity = k;
  }

  // Runs every variant twice on in[0..n) and compares with expected (the top k, largest first).
  void run_case(const char* label, const int32_t* d_in, size_t n, int k, const std::vector<int32_t>& expected) {
    ensure_out(size_t(k));
    for (const Variant& v : variants)
      for (int repeat = 0; repeat < 2; ++repeat) {
        CHECK(cudaMemsetAsync(d_out, 0xA5, size_t(k) * sizeof(int32_t), stream));
        v.run(d_in, n, k, d_out, stream);
        const cudaError_t launch = cudaGetLastError();
        const cudaError_t done = cudaStreamSynchronize(stream);
        ++runs;
        if (launch != cudaSuccess || done != cudaSuccess) {
          std::printf("FAIL %-20s %s n=%zu k=%d call %d: %s\n", v.name, label, n, k, repeat + 1,
                      cudaGetErrorString(launch != cudaSuccess ? launch : done));
          std::exit(1);  // the context may be gone
        }
        std::vector<int32_t> got(static_cast<size_t>(k), 0);
        CHECK(cudaMemcpy(got.data(), d_out, got.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
        if (!std::equal(got.begin(), got.end(), expected.begin())) {
          size_t at = 0;
          while (got[at] == expected[at]) ++at;
          std::printf("FAIL %-20s %s n=%zu k=%d call %d: out[%zu] = %d, expected %d\n", v.name, label, n, k,
                      repeat + 1, at, got[at], expected[at]);
          ++failures;
        }
      }
  }
};

std::vector<int> ks_for(size_t n) {
  std::vector<int> ks = {1, 10, 100, 1000, int(std::min<size_t>(n, 4096))};
  if (n <= 4097) ks.push_back(int(n));
  if (n >= 1000000) ks.push_back(4097);  // past the block sort: the radix path and CUB's sort
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  ks.erase(std::remove_if(ks.begin(), ks.end(), [n](int k) { return size_t(k) > n; }), ks.end());
  return ks;
}

int run_check(const std::vector<Variant>& variants) {
  Checker checker{variants};
  CHECK(cudaStreamCreate(&checker.stream));
  const size_t sizes[] = {1, 2, 3, 5, 1000, 4097, 1000003, 10000000, size_t(1) << 24};
  uint64_t seed = 1;
  for (const size_t n : sizes)
    for (const Distribution d : all_distributions) {
      const std::vector<int32_t> host = generate(n, d, seed++);
      const std::vector<int> ks = ks_for(n);
      const std::vector<int32_t> top = top_values(host, size_t(ks.back()));
      DeviceInput input(host);
      for (const int k : ks)
        checker.run_case(name_of(d), input.aligned(), n, k, std::vector<int32_t>(top.begin(), top.begin() + k));
      // The same values one int32 later: not 16-byte aligned (the sampled path's precondition).
      if (n >= 1000000 && d == Distribution::uniform) {
        std::vector<int32_t> shifted(host.begin() + 1, host.end());
        CHECK(cudaMemcpy(input.base + 1, shifted.data(), shifted.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
        const std::vector<int32_t> shifted_top = top_values(shifted, 1000);
        for (const int k : {10, 1000})
          checker.run_case("uniform-misaligned", input.base + 1, shifted.size(), k,
                           std::vector<int32_t>(shifted_top.begin(), shifted_top.begin() + k));
        CHECK(cudaMemcpy(input.base + 4, host.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice));
      }
      std::vector<int32_t> after(n);
      CHECK(cudaMemcpy(after.data(), input.aligned(), n * sizeof(int32_t), cudaMemcpyDeviceToHost));
      if (after != host) {
        std::printf("FAIL %s n=%zu: d_in was modified\n", name_of(d), n);
        ++checker.failures;
      }
    }
  if (checker.failures == 0)
    std::printf("all right: %d calls (%zu variants) matched std::nth_element + std::sort\n", checker.runs,
                variants.size());
  else
    std::printf("%d of %d calls wrong\n", checker.failures, checker.runs);
  return checker.failures == 0 ? 0 : 1;
}

// ---- time ----

__global__ void l2_flush_kernel(int4* buffer, size_t count, int salt) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    buffer[i] = make_int4(salt, salt, salt, salt);
}

__global__ void empty_kernel() {}

// Reads every value once with 16-byte loads. The store, which keeps the loads alive, happens
// only if a thread's xor of its values comes out 0x7FFFFFFE: harmless either way.
__global__ void read_only_kernel(const int4* in, size_t count, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    const int4 v = __ldcs(&in[i]);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7FFFFFFE && threadIdx.x == 1023) *sink = acc;
}

// The lab's anchor: sort all n keys descending, copy the first k.
struct FullSort {
  int32_t* sorted = nullptr;
  void* temp = nullptr;
  size_t temp_bytes = 0;
  explicit FullSort(size_t n) {
    CHECK(cudaMalloc(&sorted, n * sizeof(int32_t)));
    cub::DeviceRadixSort::SortKeysDescending(nullptr, temp_bytes, static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), int64_t(n));
    CHECK(cudaMalloc(&temp, temp_bytes));
  }
  ~FullSort() {
    cudaFree(sorted);
    cudaFree(temp);
  }
  void operator()(const int32_t* in, size_t n, int k, int32_t* out, cudaStream_t stream) {
    size_t bytes = temp_bytes;
    CHECK(cub::DeviceRadixSort::SortKeysDescending(temp, bytes, in, sorted, int64_t(n), 0, 32, stream));
    CHECK(cudaMemcpyAsync(out, sorted, size_t(k) * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream));
  }
};

struct Timer {
  cudaStream_t stream;
  int4* flush_buffer = nullptr;
  size_t flush_vectors = (size_t(256) << 20) / sizeof(int4);
  cudaEvent_t start, stop;
  int salt = 0, sm_count = 0;
  Timer() {
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaMalloc(&flush_buffer, flush_vectors * sizeof(int4)));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
  }
  // Median milliseconds of `samples` calls, each after an L2 flush, the device idle.
  double median_ms(const std::function<void(cudaStream_t)>& call, int samples) {
    for (int warm = 0; warm < 2; ++warm) call(stream);
    CHECK(cudaStreamSynchronize(stream));
    std::vector<double> ms;
    for (int s = 0; s < samples; ++s) {
      l2_flush_kernel<<<sm_count * 4, 512, 0, stream>>>(flush_buffer, flush_vectors, ++salt);
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaEventRecord(start, stream));
      call(stream);
      CHECK(cudaEventRecord(stop, stream));
      CHECK(cudaEventSynchronize(stop));
      CHECK(cudaGetLastError());
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, start, stop));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};

// Which path the sampled reference took on its last call, from its device state.
void describe_sampled_path(const int32_t* in, size_t n, int k) {
  namespace s = sampled;
  s::DeviceScratch* record = nullptr;
  char* workspace = s::scratch_for(0, record, 0);
  const uint32_t rank = s::sampled_path_serves(in, n, k) ? s::sample_rank_for(n, k) : 0;
  if (workspace == nullptr || rank == 0) {
    std::printf("    sampled reference: previous radix-select path (n or k outside the sampled path)\n");
    return;
  }
  s::SampledState state;
  CHECK(cudaMemcpy(&state, &reinterpret_cast<s::WorkspaceState*>(workspace)->sampled, sizeof state,
                   cudaMemcpyDeviceToHost));
  const unsigned parity = (record->sampled_calls + 1) % 2;  // the last call's
  const s::Workspace plan(n, k);
  const uint32_t count = state.candidate_count[parity];
  const bool agreed = ~state.threshold_min_flipped[parity] == state.threshold_max[parity];
  uint32_t above = 0, survivors = 0;
  bool overflow = false;
  for (int d = 0; d < s::bin_count && above < uint32_t(k); ++d) {
    const uint32_t c = state.bucket_counts[parity][s::bin_count - 1 - d];
    overflow |= c > uint32_t(s::SampledTuning::bucket_slots);
    if (above + c >= uint32_t(k)) survivors = above + c;
    above += c;
  }
  const char* path = !(agreed && count >= uint32_t(k) && count <= plan.capacity) ? "fallback: radix select over the input"
                     : overflow || survivors > uint32_t(s::SampledTuning::survivor_capacity)
                         ? "fallback: radix select over the list"
                         : "ranked survivors";
  std::printf("    sampled reference: sample rank %u, threshold %d, %u values kept (list capacity %u), %u survivors: %s\n",
              rank, s::to_value(state.threshold_max[parity]), count, plan.capacity, survivors, path);
}

int run_time(const std::vector<Variant>& variants, int samples) {
  Timer timer;
  int* sink = nullptr;
  CHECK(cudaMalloc(&sink, sizeof(int)));
  int device = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("%s, %d SMs; L2 flushed (256 MiB write) before each sample, median of %d\n", prop.name,
              prop.multiProcessorCount, samples);
  const double empty_ms = timer.median_ms([](cudaStream_t s) { empty_kernel<<<1, 32, 0, s>>>(); }, samples);
  std::printf("empty launch                      %9.4f ms\n", empty_ms);
  const std::pair<size_t, std::vector<int>> cases[] = {{10000000, {10, 100, 1000}}, {size_t(1) << 28, {10, 1000}}};
  for (const auto& c : cases) {
    const size_t n = c.first;
    const std::vector<int32_t> host = generate(n, Distribution::uniform, 42);
    const std::vector<int32_t> top = top_values(host, 1000);
    DeviceInput input(host);
    FullSort sort(n);
    int32_t* d_out = nullptr;
    CHECK(cudaMalloc(&d_out, 1000 * sizeof(int32_t)));
    const double read_ms = timer.median_ms(
        [&](cudaStream_t s) {
          read_only_kernel<<<timer.sm_count * 4, 1024, 0, s>>>(reinterpret_cast<const int4*>(input.aligned()), n / 4, sink);
        },
        samples);
    std::printf("n=%-10zu read-only kernel      %9.4f ms  %7.1f GB/s\n", n, read_ms, n * 4.0 / read_ms / 1e6);
    for (const int k : c.second) {
      const double sort_ms = timer.median_ms([&](cudaStream_t s) { sort(input.aligned(), n, k, d_out, s); }, samples);
      std::printf("n=%-10zu k=%-5d full CUB sort     %9.4f ms\n", n, k, sort_ms);
      for (const Variant& v : variants) {
        const double ms = timer.median_ms([&](cudaStream_t s) { v.run(input.aligned(), n, k, d_out, s); }, samples);
        std::vector<int32_t> got(static_cast<size_t>(k), 0);
        CHECK(cudaMemcpy(got.data(), d_out, got.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
        const bool right = std::equal(got.begin(), got.end(), top.begin());
        std::printf("n=%-10zu k=%-5d %-18s %9.4f ms  %6.2fx faster than the full sort%s\n", n, k, v.name, ms,
                    sort_ms / ms, right ? "" : "  WRONG OUTPUT");
        if (std::strcmp(v.name, "sampled (new)") == 0) describe_sampled_path(input.aligned(), n, k);
      }
    }
    cudaFree(d_out);
  }
  cudaFree(sink);
  return 0;
}

int run_once(const std::vector<Variant>& variants) {
  const size_t n = 10000000;
  const std::vector<int32_t> host = generate(n, Distribution::uniform, 42);
  DeviceInput input(host);
  int32_t* d_out = nullptr;
  CHECK(cudaMalloc(&d_out, 1000 * sizeof(int32_t)));
  for (const int k : {10, 1000})
    for (const Variant& v : variants) v.run(input.aligned(), n, k, d_out, 0);
  CHECK(cudaDeviceSynchronize());
  cudaFree(d_out);
  return 0;
}

}  // namespace experiment

int main(int argc, char** argv) {
  using namespace experiment;
  const std::vector<Variant> variants = {{"previous", previous::previous_topk}, {"sampled (new)", sampled::sampled_topk}};
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "check") return run_check(variants);
  if (mode == "time") return run_time(variants, argc > 2 ? std::atoi(argv[2]) : 15);
  if (mode == "once") return run_once(variants);
  std::fprintf(stderr, "usage: %s check | time [samples] | once\n", argv[0]);
  return 2;
}
