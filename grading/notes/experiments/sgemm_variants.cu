// Issue 22 experiment: the lab 04 reference's tile configurations side by side with cuBLAS and
// the previous reference (8x8 per thread, register prefetch), in one process on one GPU.
// Built by hand on the device machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/04-matmul -Iharness/include \
//        grading/notes/experiments/sgemm_variants.cu -lcublas -o sgemm_variants
// Timing: CUDA events around each call, 256 MiB written between calls to flush L2, median of
// the samples. Outputs compared with cuBLAS's.
#include "../../../solutions/04-matmul/sgemm.cu"

#define sgemm previous_sgemm
namespace previous {
#include "sgemm_8x8_register_prefetch.cu"
}
#undef sgemm

#include "sgemm_anchors.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

namespace {

#define CHECK(call) labkit_check(call, #call)
void labkit_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Candidate tilings: <block rows, cols, depth, warp rows, cols, lane rows, cols, stages,
// blocks/SM, block rows per L2 group>. Run 1 (H100, 4096^3): 128x128 8x16 k8 s4 at 88.9% of
// cuBLAS, 16x8 88.5%, 8x8 with 256 threads 86.3%, depth 16 (spills) 83.9%. Run 3: 16x8 lanes
// in 128x32 warp slices 90.4-90.6%, 8x16 in 32x128 slices 90.1%, 16x8 with 6 stages 89.9%.
using T16x8_w128x32_s4 = SgemmTiling<128, 128, 8, 128, 32, 16, 8, 4, 2>;
using T16x8_w128x32_s5 = SgemmTiling<128, 128, 8, 128, 32, 16, 8, 5, 2>;
using T16x8_w128x32_s6 = SgemmTiling<128, 128, 8, 128, 32, 16, 8, 6, 2>;
using T16x8_w128x32_g16 = SgemmTiling<128, 128, 8, 128, 32, 16, 8, 4, 2, 16>;
using T8x16_w32x128_s6 = SgemmTiling<128, 128, 8, 32, 128, 8, 16, 6, 2>;
using T8x16_w32x128_s5 = SgemmTiling<128, 128, 8, 32, 128, 8, 16, 5, 2>;

template <class T>
void run_tiling(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                cudaStream_t s) {
  launch_sgemm<T>({m, n, k, alpha, beta, a, b, c}, s);
}

struct Variant {
  const char* name;
  sgemm_anchors::SgemmFn* run;
};

const Variant variants[] = {
    {"cublasSgemm (FP32)", sgemm_anchors::cublas_sgemm},
    {"new reference sgemm()", sgemm},
    {"previous reference 8x8 regpref", previous::previous_sgemm},
    {"16x8 warp 128x32 s4", run_tiling<T16x8_w128x32_s4>},
    {"16x8 warp 128x32 s5", run_tiling<T16x8_w128x32_s5>},
    {"16x8 warp 128x32 s6", run_tiling<T16x8_w128x32_s6>},
    {"16x8 warp 128x32 s4 group 16", run_tiling<T16x8_w128x32_g16>},
    {"8x16 warp 32x128 s5", run_tiling<T8x16_w32x128_s5>},
    {"8x16 warp 32x128 s6", run_tiling<T8x16_w32x128_s6>},
    {"cublasSgemm (FP32) again", sgemm_anchors::cublas_sgemm},
};

float* flush_buffer() {
  static float* p = nullptr;
  if (!p) CHECK(cudaMalloc(&p, size_t(256) << 20));
  return p;
}

double median_ms(const std::function<void()>& call, int samples) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) call();
  std::vector<float> times;
  for (int i = 0; i < samples; ++i) {
    CHECK(cudaMemsetAsync(flush_buffer(), i, size_t(256) << 20));
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

void bench_shape(int m, int n, int k, float alpha, float beta, int samples) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> ha(size_t(m) * k), hb(size_t(k) * n), hc(size_t(m) * n);
  for (auto& x : ha) x = u(rng);
  for (auto& x : hb) x = u(rng);
  for (auto& x : hc) x = u(rng);
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, ha.size() * 4));
  CHECK(cudaMalloc(&b, hb.size() * 4));
  CHECK(cudaMalloc(&c, hc.size() * 4));
  CHECK(cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
  const double flop = 2.0 * m * n * k;
  std::printf("\nm=%d n=%d k=%d alpha=%g beta=%g\n", m, n, k, alpha, beta);
  std::vector<float> want;
  double cublas_ms = 0;
  for (const Variant& v : variants) {
    auto call = [&] { v.run(m, n, k, alpha, a, b, beta, c, 0); };
    const double ms = samples > 0 ? median_ms(call, samples) : 0;
    CHECK(cudaMemcpy(c, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
    call();
    CHECK(cudaDeviceSynchronize());
    std::vector<float> got(hc.size());
    CHECK(cudaMemcpy(got.data(), c, got.size() * 4, cudaMemcpyDeviceToHost));
    if (want.empty()) want = got, cublas_ms = ms;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double d = std::fabs(double(got[i]) - want[i]);
      worst = std::max(worst, std::isnan(d) ? INFINITY : d);
    }
    const bool right = worst <= 64 * 0x1.0p-24 * k * (std::fabs(alpha) + std::fabs(beta) + 1);
    if (samples > 0)
      std::printf("  %-32s %9.4f ms %7.2f TFLOP/s %6.1f%% of cuBLAS%s\n", v.name, ms, flop / ms * 1e-9,
                  100 * cublas_ms / ms, right ? "" : "  WRONG OUTPUT");
    else
      std::printf("  %-32s %s (worst %.3g)\n", v.name, right ? "right" : "WRONG OUTPUT", worst);
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
}

}  // namespace

int main() {
  // Correctness of every variant on shapes with ragged edges and unaligned rows (untimed).
  bench_shape(127, 129, 131, 0.5f, 2.f, 0);
  bench_shape(256, 258, 254, 1.f, 0.f, 0);
  bench_shape(1000, 1001, 999, 0.5f, 2.f, 0);
  bench_shape(4096, 4096, 4096, 1.f, 0.f, 30);
  bench_shape(1024, 2048, 512, 1.f, 0.f, 100);
  bench_shape(8192, 8192, 8192, 1.f, 0.f, 5);
  bench_shape(4096, 4096, 4096, 1.f, 0.f, 30);
  return 0;
}
