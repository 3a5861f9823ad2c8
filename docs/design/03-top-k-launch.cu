// Lab 03 design record: what a cooperative launch costs as a call, beside a plain one, and
// where the host's launch latency sits in a timed call. Each case is timed as the design
// record's timeline times a call (events, the L2 flushed by a memset before each, median of
// 41), alone and behind a 50 us spin kernel that hides the host's latency (less the spin
// kernel's own time): the reference at n = 10^7 and k = 10 and 1000, the read-only kernel,
// and an empty kernel of the reference's shape by a plain and by a cooperative launch. Twice
// over. On a GPU machine, from the repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/03-top-k -Iharness/include -o /tmp/launch \
//        docs/design/03-top-k-launch.cu
//   /tmp/launch
#include "../../solutions/03-top-k/topk.cu"
#include <labkit/read_only.cuh>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>
__global__ void __launch_bounds__(512, 2) empty_kernel(int* p) { if (p && threadIdx.x == 9999) *p = 1; }
// About `ns` nanoseconds at the H100's and H200's SM clocks (about 2 cycles a nanosecond);
// its own time is measured and subtracted.
__global__ void spin_kernel(long long ns) { long long t0 = clock64(); while (clock64() - t0 < ns * 2) {} }
template <class F> float median_us(F f, char* flush, bool spin) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> v;
  for (int r = 0; r < 41; ++r) {
    cudaMemsetAsync(flush, r, 256 << 20); cudaDeviceSynchronize();
    cudaEventRecord(a);
    if (spin) spin_kernel<<<1, 1>>>(50000);
    f();
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); v.push_back(ms * 1000);
  }
  std::sort(v.begin(), v.end()); return v[20];
}
int main() {
  const size_t n = 10000000;
  std::vector<int32_t> h(n); std::mt19937 rng(7); for (auto& x : h) x = int32_t(rng());
  int32_t *d_in, *d_out; char* flush; uint32_t* sink;
  cudaMalloc(&d_in, n * 4); cudaMalloc(&d_out, 8192 * 4); cudaMalloc(&flush, 256 << 20); cudaMalloc(&sink, 4);
  cudaMemcpy(d_in, h.data(), n * 4, cudaMemcpyHostToDevice);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 80 << 10);
  int* null = nullptr; void* args[] = {&null};
  auto plain = [&] { empty_kernel<<<2 * sms, 512, 80 << 10>>>(nullptr); };
  auto coop = [&] { cudaLaunchCooperativeKernel((void*)empty_kernel, dim3(2 * sms), dim3(512), args, 80 << 10, 0); };
  auto floor = [&] { labkit::read_only(d_in, n * 4, sink, sms, 0); };
  auto k10 = [&] { topk(d_in, n, 10, d_out, 0); };
  auto k1000 = [&] { topk(d_in, n, 1000, d_out, 0); };
  const float spin = median_us([] {}, flush, true);
  printf("spin kernel alone %.1f us\n", spin);
  struct { const char* name; std::function<void()> f; } cases[] = {
      {"empty, plain launch", plain}, {"empty, cooperative launch", coop}, {"read-only kernel", floor},
      {"topk k=10", k10}, {"topk k=1000", k1000}};
  for (int round = 0; round < 2; ++round)
    for (auto& c : cases) {
      const float alone = median_us(c.f, flush, false), hidden = median_us(c.f, flush, true) - spin;
      printf("%-28s call %6.1f us, after a spin kernel (host latency hidden) %6.1f us\n", c.name, alone, hidden);
    }
}
