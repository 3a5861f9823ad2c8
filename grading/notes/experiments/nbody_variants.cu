// Issue 22 experiment: tunings of the lab 08 reference kernel side by side, in one process.
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/08-nbody grading/notes/experiments/nbody_variants.cu -o nbody_variants
// Events around each call, median of the samples; TFLOP/s by the 20-FLOP convention, % of
// the FP32 peak at the maximum clock, and the SM clock measured during the run (clock64 over
// an event-timed spin) so a throttled GPU shows.
#include "../../../solutions/08-nbody/nbody.cu"
#include "nbody_symmetric.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

namespace {

#define CHECK(call) check(call, #call)
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <int Chunk>
void run_symmetric(const float4* p, int n, float soft, float3* a, cudaStream_t s) {
  symmetric::nbody_accel_symmetric(p, n, soft, a, s, Chunk);
}

template <class T>
void run_tuning(const float4* p, int n, float soft, float3* a, cudaStream_t s) {
  launch_nbody<T>(p, n, soft, a, s);
}

using Fn = void(const float4*, int, float, float3*, cudaStream_t);
struct Variant {
  const char* name;
  Fn* run;
};

const Variant variants[] = {
    {"reference nbody_accel", nbody_accel},
    {"128 thr, 4 bodies, unroll 8", run_tuning<NbodyTuning<128, 4, 8, 4>>},
    {"128 thr, 4 bodies, unroll 16", run_tuning<NbodyTuning<128, 4, 16, 4>>},
    {"128 thr, 4 bodies, unroll 4", run_tuning<NbodyTuning<128, 4, 4, 4>>},
    {"128 thr, 8 bodies, unroll 8", run_tuning<NbodyTuning<128, 8, 8, 2>>},
    {"128 thr, 8 bodies, unroll 4", run_tuning<NbodyTuning<128, 8, 4, 4>>},
    {"256 thr, 4 bodies, unroll 8", run_tuning<NbodyTuning<256, 4, 8, 2>>},
    {"256 thr, 2 bodies, unroll 8", run_tuning<NbodyTuning<256, 2, 8, 4>>},
    {"64 thr, 8 bodies, unroll 8", run_tuning<NbodyTuning<64, 8, 8, 8>>},
    {"128 thr, 6 bodies, unroll 8", run_tuning<NbodyTuning<128, 6, 8, 3>>},
    {"symmetric pairs, chunk 1024", run_symmetric<1024>},
    {"symmetric pairs, chunk 4096", run_symmetric<4096>},
    {"symmetric pairs, chunk 16384", run_symmetric<16384>},
};

__global__ void spin_kernel(long long cycles, long long* out) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = clock64() - start;
}

double sm_clock_mhz() {
  long long* d;
  CHECK(cudaMalloc(&d, 8));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  spin_kernel<<<132, 32>>>(20000000, d);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  long long cycles;
  CHECK(cudaMemcpy(&cycles, d, 8, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return cycles / (ms * 1e3);
}

double median_ms(const std::function<void()>& call, int samples) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 2; ++i) call();
  std::vector<float> times;
  for (int i = 0; i < samples; ++i) {
    CHECK(cudaEventRecord(start));
    call();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CHECK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void bench(int n, double peak) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1), mass(0.1f, 2.f);
  std::vector<float4> h(n);
  for (auto& b : h) b = make_float4(u(rng), u(rng), u(rng), mass(rng));
  float4* p;
  float3* a;
  CHECK(cudaMalloc(&p, n * sizeof(float4)));
  CHECK(cudaMalloc(&a, n * sizeof(float3)));
  CHECK(cudaMemcpy(p, h.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
  const float soft = 1e-4f;
  for (const Variant& v : variants) {
    const double ms = median_ms([&] { v.run(p, n, soft, a, 0); }, n >= (1 << 18) ? 9 : 31);
    std::vector<float3> got(n);
    CHECK(cudaMemcpy(got.data(), a, n * sizeof(float3), cudaMemcpyDeviceToHost));
    bool right = true;
    for (int k = 0; k < 64; ++k) {
      const int i = int((long long)k * (n - 1) / 63);
      double acc[3] = {0, 0, 0}, mag[3] = {0, 0, 0};
      for (int j = 0; j < n; ++j) {
        const double d[3] = {double(h[j].x) - h[i].x, double(h[j].y) - h[i].y, double(h[j].z) - h[i].z};
        const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + soft;
        const double s = h[j].w / (r2 * std::sqrt(r2));
        for (int c = 0; c < 3; ++c) acc[c] += d[c] * s, mag[c] += std::fabs(d[c] * s);
      }
      const float g[3] = {got[i].x, got[i].y, got[i].z};
      for (int c = 0; c < 3; ++c)
        if (!(std::fabs(g[c] - acc[c]) <= (n + 64.0) * 0x1.0p-23 * mag[c])) right = false;
    }
    const double tflops = 20.0 * double(n) * n / (ms * 1e-3) / 1e12;
    std::printf("n = 2^%-2d %-32s %9.4f ms %6.2f TFLOP/s %5.1f%% of FP32 peak%s\n", int(std::log2(n)), v.name, ms,
                tflops, 100 * tflops / peak, right ? "" : "  WRONG OUTPUT");
  }
  CHECK(cudaFree(p));
  CHECK(cudaFree(a));
}

}  // namespace

int main() {
  int clock_khz = 0, sms = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const double peak = sms * 128 * 2.0 * clock_khz * 1e3 / 1e12;
  std::printf("FP32 peak %.1f TFLOP/s at %d MHz; SM clock now %.0f MHz\n", peak, clock_khz / 1000, sm_clock_mhz());
  for (int log_n : {14, 16, 18}) bench(1 << log_n, peak);
  std::printf("SM clock after: %.0f MHz\n", sm_clock_mhz());
  return 0;
}
