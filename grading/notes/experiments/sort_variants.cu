// Issue 22 experiment: lab 09's one-sweep sort with other pass-kernel shapes, a narrower
// look-back, fewer blocks per SM, and the previous reference (3840-key tiles),
// each beside cub::DeviceRadixSort::SortKeys in the same process. First every variant sorts
// the correctness inputs (the lab's sizes and distributions, tile-size edges) and is compared
// with CUB's output, with guard words after the keys and the temporary storage; then all are
// timed round-robin: per sample a fresh copy of the keys, a 256 MiB write that flushes L2,
// events around the one call; median of the samples.
//   nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -Ilabs/09-radix-sort grading/notes/experiments/sort_variants.cu -o sv
//   sv check | sv time [rounds] | sv once (one sort of 2^26 keys each, for ncu)
#include "../../../solutions/09-radix-sort/sort.cu"
#include "sort_onesweep_3840_tiles.cu"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace experiment {

#define CHECK(call) check(call, #call, __LINE__)
void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "line %d: %s: %s\n", line, what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <int threads, int keys, int window, int min_blocks>
struct Shape {
  static constexpr int threads_per_block = threads;
  static constexpr int keys_per_thread = keys;
  static constexpr int lookback_window = window;
  static constexpr int min_blocks_per_sm = min_blocks;
};

using SortFunction = std::function<void(uint32_t*, size_t, void*, size_t, cudaStream_t)>;
using TempFunction = std::function<size_t(size_t)>;

struct Variant {
  std::string name;
  TempFunction temp_bytes;
  SortFunction sort;
  const void* pass_kernel;  // for the occupancy line; null when not ours
  int threads;
};

template <class Tuning>
Variant ours(const std::string& name) {
  return {name, [](size_t n) { return TempLayout<Tuning>(n).total_bytes; },
          [](uint32_t* k, size_t n, void* t, size_t b, cudaStream_t s) { onesweep_radix_sort<Tuning>(k, n, t, b, s); },
          reinterpret_cast<const void*>(onesweep_pass_kernel<Tuning>), Tuning::threads_per_block};
}

std::vector<Variant> variants() {
  // Calls 6-10 also timed the ways the reference no longer goes (digit by shift and mask, ballots
  // in C++, __match_any_sync, if (leader) around the atomic, launches overlapped with
  // programmatic dependent launch): grading/notes/issue22/.
  std::vector<Variant> v = {
      ours<OnesweepTuning>("256x36 (reference)"),
      ours<Shape<256, 32, 4, 3>>("256x32 w4"),
      ours<Shape<256, 28, 4, 3>>("256x28 w4"),
      ours<Shape<256, 36, 4, 2>>("256x36 w4 2 blocks/SM"),
      ours<Shape<256, 36, 1, 3>>("256x36 w1"),
      {"previous reference 256x15", previous_reference::radix_sort_temp_bytes, previous_reference::radix_sort,
       nullptr, 0},
  };
  // SV_ONLY=name,name,...: only those variants.
  if (const char* only = std::getenv("SV_ONLY")) {
    const std::string wanted = std::string(",") + only + ",";
    std::vector<Variant> kept;
    for (const Variant& x : v)
      if (wanted.find("," + x.name + ",") != std::string::npos) kept.push_back(x);
    v = kept;
  }
  return v;
}

// CUB, out of place as the lab's benchmark calls it.
size_t cub_temp_bytes(size_t n) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                                 int(n));
  return bytes;
}

void cub_sort(const uint32_t* in, uint32_t* out, size_t n, void* temp, size_t bytes, cudaStream_t stream) {
  CHECK(cub::DeviceRadixSort::SortKeys(temp, bytes, in, out, int(n), 0, 32, stream));
}

// ---- inputs ------------------------------------------------------------------------------

std::vector<uint32_t> make_keys(size_t n, const std::string& kind, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> k(n);
  for (auto& x : k) x = rng();
  if (kind == "all-equal") std::fill(k.begin(), k.end(), 0x9e3779b9u);
  if (kind == "sorted") std::sort(k.begin(), k.end());
  if (kind == "reversed") std::sort(k.rbegin(), k.rend());
  if (kind == "few-distinct-5")
    for (auto& x : k) x = 0x01234567u * (x % 5);
  if (kind == "few-distinct-3")
    for (auto& x : k) x = 0x7654321u * (x % 3 + 1);
  if (kind == "high-bits")
    for (auto& x : k) x |= 0x80000000u;
  if (kind == "low-bits")
    for (auto& x : k) x &= 255u;
  if (kind == "single-bit")
    for (auto& x : k) x = 1u << (x % 32);
  if (kind == "extremes")
    for (auto& x : k) x = (x & 1) ? 0xffffffffu - (x >> 24) : (x >> 24);
  if (kind == "skewed")
    for (auto& x : k) x &= rng() & rng();
  return k;
}

struct Case {
  size_t n;
  std::string kind;
};

std::vector<Case> correctness_cases() {
  std::vector<Case> c;
  for (size_t n : {2, 3, 31, 32, 33, 1000, 3839, 3840, 3841, 4097, 7679, 7680, 7681, 15361, 65537, 1000003})
    c.push_back({n, "uniform"});
  c.push_back({(size_t(1) << 24) + 1, "uniform"});
  for (const char* kind : {"all-equal", "sorted", "reversed", "few-distinct-5", "high-bits", "low-bits", "single-bit",
                           "extremes", "skewed"})
    c.push_back({1000003, kind});
  c.push_back({9999991, "skewed"});
  c.push_back({(size_t(1) << 25) + 1, "few-distinct-3"});
  c.push_back({5000011, "extremes"});
  return c;
}

__global__ void count_mismatches_kernel(const uint32_t* a, const uint32_t* b, size_t n, unsigned long long* count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    if (a[i] != b[i]) atomicAdd(count, 1ull);
}

template <typename T>
struct Buffer {
  T* p = nullptr;
  size_t count = 0;
  explicit Buffer(size_t c) : count(c) { CHECK(cudaMalloc(&p, std::max<size_t>(c, 1) * sizeof(T))); }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

constexpr uint32_t guard_word = 0x5eed5eedu;
constexpr int guard_words = 64;
constexpr int temp_guard_bytes = 256;

bool guards_intact(const uint32_t* d, size_t count_words, uint32_t word) {
  std::vector<uint32_t> h(count_words);
  CHECK(cudaMemcpy(h.data(), d, count_words * 4, cudaMemcpyDeviceToHost));
  return std::all_of(h.begin(), h.end(), [&](uint32_t x) { return x == word; });
}

void check_correctness(const std::vector<Variant>& vs) {
  const auto cases = correctness_cases();
  std::vector<int> failures(vs.size(), 0);
  Buffer<unsigned long long> mismatches(1);
  for (const Case& c : cases) {
    const std::vector<uint32_t> input = make_keys(c.n, c.kind, uint32_t(c.n * 31 + c.kind.size()));
    Buffer<uint32_t> d_input(c.n), d_expected(c.n), d_keys(c.n + guard_words);
    CHECK(cudaMemcpy(d_input.p, input.data(), c.n * 4, cudaMemcpyHostToDevice));
    Buffer<uint8_t> cub_temp(cub_temp_bytes(c.n));
    cub_sort(d_input.p, d_expected.p, c.n, cub_temp.p, cub_temp.count, 0);
    std::string line;
    for (size_t v = 0; v < vs.size(); ++v) {
      const size_t bytes = vs[v].temp_bytes(c.n);
      Buffer<uint8_t> temp(bytes + temp_guard_bytes);
      int bad = 0;
      for (int repeat = 0; repeat < 2; ++repeat) {  // twice: garbage left by the first call must not matter
        CHECK(cudaMemcpy(d_keys.p, d_input.p, c.n * 4, cudaMemcpyDeviceToDevice));
        std::vector<uint32_t> guards(guard_words, guard_word);
        CHECK(cudaMemcpy(d_keys.p + c.n, guards.data(), guard_words * 4, cudaMemcpyHostToDevice));
        if (repeat == 0) CHECK(cudaMemset(temp.p, 0xA5, bytes + temp_guard_bytes));
        vs[v].sort(d_keys.p, c.n, temp.p, bytes, 0);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemset(mismatches.p, 0, 8));
        count_mismatches_kernel<<<264, 256>>>(d_keys.p, d_expected.p, c.n, mismatches.p);
        unsigned long long wrong = 0;
        CHECK(cudaMemcpy(&wrong, mismatches.p, 8, cudaMemcpyDeviceToHost));
        if (wrong != 0) bad |= 1;
        if (!guards_intact(d_keys.p + c.n, guard_words, guard_word)) bad |= 2;
        if (!guards_intact(reinterpret_cast<uint32_t*>(temp.p + bytes), temp_guard_bytes / 4, 0xA5A5A5A5u)) bad |= 4;
      }
      if (bad) {
        ++failures[v];
        line += "  " + vs[v].name + (bad & 1 ? " WRONG" : "") + (bad & 2 ? " KEYS-GUARD" : "") +
                (bad & 4 ? " TEMP-GUARD" : "");
      }
    }
    std::printf("check n=%-9zu %-15s %s\n", c.n, c.kind.c_str(), line.empty() ? "all right" : line.c_str());
  }
  for (size_t v = 0; v < vs.size(); ++v)
    std::printf("correctness %-28s %d of %zu cases failed\n", vs[v].name.c_str(), failures[v], cases.size());
}

// ---- timing ------------------------------------------------------------------------------

double median(std::vector<float> x) {
  std::sort(x.begin(), x.end());
  return x.size() % 2 ? x[x.size() / 2] : 0.5 * (x[x.size() / 2 - 1] + x[x.size() / 2]);
}

void time_size(const char* label, size_t n, int rounds, const std::vector<Variant>& vs) {
  const std::vector<uint32_t> input = make_keys(n, "uniform", 42);
  Buffer<uint32_t> pristine(n), keys(n), cub_out(n), expected(n);
  CHECK(cudaMemcpy(pristine.p, input.data(), n * 4, cudaMemcpyHostToDevice));
  size_t temp_bytes = cub_temp_bytes(n);
  for (const Variant& v : vs) temp_bytes = std::max(temp_bytes, v.temp_bytes(n));
  Buffer<uint8_t> temp(temp_bytes);
  Buffer<uint8_t> flush(size_t(256) << 20);
  cub_sort(pristine.p, expected.p, n, temp.p, cub_temp_bytes(n), 0);

  const size_t rows = vs.size() + 1;  // the last row is CUB
  std::vector<std::vector<float>> ms(rows);
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
    for (size_t r = 0; r < rows; ++r) {
      CHECK(cudaMemcpy(keys.p, pristine.p, n * 4, cudaMemcpyDeviceToDevice));
      CHECK(cudaMemset(flush.p, round & 0xff, flush.count));
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaEventRecord(start, 0));
      if (r < vs.size())
        vs[r].sort(keys.p, n, temp.p, vs[r].temp_bytes(n), 0);
      else
        cub_sort(keys.p, cub_out.p, n, temp.p, cub_temp_bytes(n), 0);
      CHECK(cudaEventRecord(stop, 0));
      CHECK(cudaEventSynchronize(stop));
      CHECK(cudaGetLastError());
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, start, stop));
      if (round > 0) ms[r].push_back(t);
      if (round == rounds) {  // the last sample's output, against CUB's
        Buffer<unsigned long long> wrong(1);
        CHECK(cudaMemset(wrong.p, 0, 8));
        count_mismatches_kernel<<<264, 256>>>(r < vs.size() ? keys.p : cub_out.p, expected.p, n, wrong.p);
        unsigned long long w = 0;
        CHECK(cudaMemcpy(&w, wrong.p, 8, cudaMemcpyDeviceToHost));
        if (w) std::printf("%s %s: %llu keys WRONG\n", label, r < vs.size() ? vs[r].name.c_str() : "cub", w);
      }
    }
  }
  const double cub_ms = median(ms[rows - 1]);
  for (size_t r = 0; r < rows; ++r) {
    const double t = median(ms[r]);
    std::printf("%-9s %-28s %8.4f ms %7.2f Gkeys/s %6.1f%% of CUB  (min %.4f, max %.4f)\n", label,
                r < vs.size() ? vs[r].name.c_str() : "cub::DeviceRadixSort", t, n / (t * 1e-3) / 1e9,
                100 * cub_ms / t, *std::min_element(ms[r].begin(), ms[r].end()),
                *std::max_element(ms[r].begin(), ms[r].end()));
  }
}

// One sort of n random keys by each variant, then by CUB: what a profiler looks at.
void sort_once(size_t n, const std::vector<Variant>& vs) {
  const std::vector<uint32_t> input = make_keys(n, "uniform", 42);
  Buffer<uint32_t> pristine(n), keys(n), cub_out(n);
  CHECK(cudaMemcpy(pristine.p, input.data(), n * 4, cudaMemcpyHostToDevice));
  size_t temp_bytes = cub_temp_bytes(n);
  for (const Variant& v : vs) temp_bytes = std::max(temp_bytes, v.temp_bytes(n));
  Buffer<uint8_t> temp(temp_bytes);
  for (const Variant& v : vs) {
    CHECK(cudaMemcpy(keys.p, pristine.p, n * 4, cudaMemcpyDeviceToDevice));
    v.sort(keys.p, n, temp.p, v.temp_bytes(n), 0);
    CHECK(cudaDeviceSynchronize());
  }
  cub_sort(pristine.p, cub_out.p, n, temp.p, cub_temp_bytes(n), 0);
  CHECK(cudaDeviceSynchronize());
}

void print_kernel_facts(const std::vector<Variant>& vs) {
  for (const Variant& v : vs) {
    if (v.pass_kernel == nullptr) continue;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, v.pass_kernel));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, v.pass_kernel, v.threads, 0));
    std::printf("kernel %-28s %3d registers, %5zu B shared, %d blocks (%d warps) per SM\n", v.name.c_str(),
                a.numRegs, a.sharedSizeBytes, blocks, blocks * v.threads / 32);
  }
}

}  // namespace experiment

int main(int argc, char** argv) {
  using namespace experiment;
  const std::string mode = argc > 1 ? argv[1] : "time";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const std::vector<Variant> vs = variants();
  if (mode == "check") {
    print_kernel_facts(vs);
    check_correctness(vs);
    return 0;
  }
  if (mode == "once") {
    sort_once(size_t(1) << 26, vs);
    return 0;
  }
  if (!std::getenv("SV_ONLY")) time_size("n = 2^20", size_t(1) << 20, 2 * rounds, vs);
  time_size("n = 2^24", size_t(1) << 24, rounds, vs);
  time_size("n = 2^26", size_t(1) << 26, rounds, vs);
  return 0;
}
