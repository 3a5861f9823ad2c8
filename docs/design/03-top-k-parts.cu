// Lab 03 design record: the reference's call at n = 10^7 taken apart. A copy of the reference
// written by 03-top-k-parts.py leaves parts of the call out by the device variable
// parts_mode (the table below); each mode is timed as the timeline times a call (events, the
// L2 flushed by a memset before each, median of 41), alone and behind a 50 us spin kernel that
// hides the host's launch latency (less the spin kernel's own time), beside the read-only
// kernel and an empty cooperative kernel of the reference's launch shape. Modes 0-2 must give
// the right answer; the others leave it wrong. On a GPU machine, from the repository root:
//   python3 docs/design/03-top-k-parts.py solutions/03-top-k/topk.cu /tmp/topk_parts.cu
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/03-top-k -Iharness/include -I/tmp \
//        -DPARTS='"topk_parts.cu"' -o /tmp/parts docs/design/03-top-k-parts.cu
//   /tmp/parts
#include PARTS
#include <labkit/read_only.cuh>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

struct Mode {
  int id;
  const char* name;
  bool answers;  // the output must be the top k
};
const Mode modes[] = {
    {0, "the reference", true},
    {1, "the bound given, no sample", true},
    {2, "the bound given, after the sample and arrival", true},
    {3, "the read alone, nothing kept, an empty finish", false},
    {4, "no read, the arrival, plan and an empty finish", false},
    {6, "no read, the arrival and plan, no finish", false},
    {5, "the launch and the state's zeroing only", false},
    {7, "the launch only: return at entry", false},
};

// About `ns` nanoseconds at the H100's and H200's SM clocks; its own time is subtracted.
__global__ void spin_kernel(long long ns) { long long t0 = clock64(); while (clock64() - t0 < ns * 2) {} }
__global__ void __launch_bounds__(512, 2) empty_kernel(int* p) { if (p && threadIdx.x == 9999) *p = 1; }

template <class F>
float median_us(F f, char* flush, bool spin) {
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> v;
  for (int r = 0; r < 41; ++r) {
    cudaMemsetAsync(flush, r, 256 << 20);
    cudaDeviceSynchronize();
    cudaEventRecord(a);
    if (spin) spin_kernel<<<1, 1>>>(50000);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    v.push_back(ms * 1000);
  }
  std::sort(v.begin(), v.end());
  return v[20];
}

int main() {
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  char* flush; uint32_t* sink;
  cudaMalloc(&flush, 256 << 20); cudaMalloc(&sink, 4);
  const float spin = median_us([] {}, flush, true);
  auto report = [&](const char* name, const std::function<void()>& call, const char* verdict) {
    printf("%-52s call %6.1f us, host latency hidden %6.1f us %s\n", name, median_us(call, flush, false),
           median_us(call, flush, true) - spin, verdict);
  };

  const size_t n = 10000000;
  std::vector<int32_t> h(n);
  std::mt19937 rng(7);
  for (auto& x : h) x = int32_t(rng());
  int32_t *d_in, *d_out;
  cudaMalloc(&d_in, n * 4); cudaMalloc(&d_out, 8192 * 4);
  cudaMemcpy(d_in, h.data(), n * 4, cudaMemcpyHostToDevice);
  std::vector<int32_t> expected = h;
  std::partial_sort(expected.begin(), expected.begin() + 1000, expected.end(), std::greater<int32_t>());

  report("read-only kernel", [&] { labkit::read_only(d_in, n * 4, sink, sms, 0); }, "");
  cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 80 << 10);
  int* null = nullptr;
  void* args[] = {&null};
  report("empty cooperative kernel of the reference's shape",
         [&] { cudaLaunchCooperativeKernel((void*)empty_kernel, dim3(2 * sms), dim3(512), args, 80 << 10, 0); }, "");
  int failures = 0;
  for (int k : {10, 1000}) {
    for (const Mode& mode : modes) {
      const int whole = 0;
      cudaMemcpyToSymbol(parts_mode, &whole, sizeof whole);
      topk(d_in, n, k, d_out, 0);  // records the bound it draws, for modes 1 and 2
      cudaMemcpyToSymbol(parts_mode, &mode.id, sizeof mode.id);
      std::vector<int32_t> got(k);
      topk(d_in, n, k, d_out, 0);
      cudaMemcpy(got.data(), d_out, k * 4, cudaMemcpyDeviceToHost);
      const bool right = std::equal(got.begin(), got.end(), expected.begin()) && cudaGetLastError() == cudaSuccess;
      if (mode.answers && !right) ++failures;
      char name[96];
      snprintf(name, sizeof name, "k=%d %d: %s", k, mode.id, mode.name);
      report(name, [&] { topk(d_in, n, k, d_out, 0); }, mode.answers ? (right ? "ok" : "WRONG") : "");
    }
  }
  printf("failures: %d\n", failures);
  return failures != 0;
}
