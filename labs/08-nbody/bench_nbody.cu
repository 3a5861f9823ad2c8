// Lab 08 benchmark: the reference solution beside the chapter's two kernels (a naive one that
// reads every body j from global memory, and the chapter's shared-memory tiled kernel), at the
// body counts of datasets/08-nbody.yaml's performance cases, with coordinates drawn from their
// distributions in a cube (the timing is the same for any layout). N-body has no library to
// compare with; its anchor is the GPU's FP32 peak. Each row gives the time, interactions per
// second (n^2 / time), TFLOP/s by the usual convention of 20 floating-point operations per
// interaction, the % of FP32 peak that is, and the ratio reference time / time that the grader
// computes. Not a test: it prints numbers for people to read. Every kernel's output is checked
// on sampled bodies against a double-precision sum.
//
// The chapter's kernels treat every body as having mass 1, so the bodies here all have mass 1:
// then all kernels compute the same thing as the lab's contract.
#include "nbody.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

using labkit::DeviceBuffer;
constexpr int chapter_block_size = 256;   // the chapter's BLOCK_SIZE
constexpr double flops_per_interaction = 20;  // the convention of GPU Gems 3, ch. 31, and the CUDA nbody sample
constexpr float softening2 = 1e-4f;

// Before the chapter's tiling: one thread per body, every body j read from global memory (the
// L1 cache serves most of them, since a warp reads the same body at once).
__global__ void chapter_naive_kernel(const float4* p, float3* accel, float soft, int n) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i >= n) return;
  const float4 me = p[i];
  float fx = 0.f, fy = 0.f, fz = 0.f;
  for (int j = 0; j < n; j++) {
    const float dx = p[j].x - me.x, dy = p[j].y - me.y, dz = p[j].z - me.z;
    const float dist_sqr = dx * dx + dy * dy + dz * dz + soft;
    const float inv_dist = rsqrtf(dist_sqr);
    const float inv_dist3 = inv_dist * inv_dist * inv_dist;
    fx += dx * inv_dist3;
    fy += dy * inv_dist3;
    fz += dz * inv_dist3;
  }
  accel[i] = make_float3(fx, fy, fz);
}

// The chapter's calculateBodyForce, as it writes it (tile of float3 positions, p[i] read in
// the inner loop, unit masses), storing the acceleration instead of updating a velocity.
// Right only when n is a multiple of 256, as every n below is.
__global__ void chapter_tiled_kernel(const float4* p, float3* accel, float soft, int n) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) {
    float fx = 0.f, fy = 0.f, fz = 0.f;
    for (int tile = 0; tile < gridDim.x; tile++) {
      __shared__ float3 shared_position[chapter_block_size];
      const float4 temp_position = p[tile * blockDim.x + threadIdx.x];
      shared_position[threadIdx.x] = make_float3(temp_position.x, temp_position.y, temp_position.z);
      __syncthreads();
      for (int j = 0; j < chapter_block_size; j++) {
        const float dx = shared_position[j].x - p[i].x;
        const float dy = shared_position[j].y - p[i].y;
        const float dz = shared_position[j].z - p[i].z;
        const float dist_sqr = dx * dx + dy * dy + dz * dz + soft;
        const float inv_dist = rsqrtf(dist_sqr);
        const float inv_dist3 = inv_dist * inv_dist * inv_dist;
        fx += dx * inv_dist3;
        fy += dy * inv_dist3;
        fz += dz * inv_dist3;
      }
      __syncthreads();
    }
    accel[i] = make_float3(fx, fy, fz);
  }
}

// FP32 lanes per SM: 64 on Volta, Turing and the A100 (7.x, 8.0), 128 since (8.6, 8.9, 9.0, 10.x, 12.x).
int fp32_lanes_per_sm(const labkit::DeviceInfo& d) { return d.major < 8 || (d.major == 8 && d.minor == 0) ? 64 : 128; }

// The FP32 peak at the device's maximum clock: SMs x lanes x 2 (an FMA is two operations) x
// clock. An H100 SXM: 132 x 128 x 2 x 1980 MHz = 66.9 TFLOP/s.
double fp32_peak_tflops() {
  const labkit::DeviceInfo& d = labkit::current_device();
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d.ordinal);
  return double(d.sm_count) * fp32_lanes_per_sm(d) * 2.0 * clock_khz * 1e3 / 1e12;
}

struct Variant {
  const char* name;
  std::function<void(const float4*, int, float3*, cudaStream_t)> run;
};

std::vector<Variant> variants() {
  auto chapter_grid = [](int n) { return (n + chapter_block_size - 1) / chapter_block_size; };
  return {
      {"reference solution",
       [](const float4* p, int n, float3* a, cudaStream_t s) { nbody_accel(p, n, softening2, a, s); }},
      {"chapter: shared-memory tiles",
       [chapter_grid](const float4* p, int n, float3* a, cudaStream_t s) {
         chapter_tiled_kernel<<<chapter_grid(n), chapter_block_size, 0, s>>>(p, a, softening2, n);
       }},
      {"chapter: naive, global memory",
       [chapter_grid](const float4* p, int n, float3* a, cudaStream_t s) {
         chapter_naive_kernel<<<chapter_grid(n), chapter_block_size, 0, s>>>(p, a, softening2, n);
       }},
  };
}

// Checks 256 bodies, spread over the range, against a double-precision sum, with the lab's
// tolerance: (n + 64) 2^-23 times the sum of the terms' magnitudes, per component.
bool sampled_bodies_right(const std::vector<float4>& bodies, const std::vector<float3>& accel) {
  const size_t n = bodies.size();
  for (size_t k = 0; k < 256; ++k) {
    const size_t i = k * (n - 1) / 255;
    double value[3] = {0, 0, 0}, magnitude[3] = {0, 0, 0};
    for (size_t j = 0; j < n; ++j) {
      const double d[3] = {double(bodies[j].x) - bodies[i].x, double(bodies[j].y) - bodies[i].y,
                           double(bodies[j].z) - bodies[i].z};
      const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + double(softening2);
      const double s = double(bodies[j].w) / (r2 * std::sqrt(r2));
      for (int a = 0; a < 3; ++a) value[a] += d[a] * s, magnitude[a] += std::fabs(d[a] * s);
    }
    const float got[3] = {accel[i].x, accel[i].y, accel[i].z};
    for (int a = 0; a < 3; ++a) {
      const double tolerance = (double(n) + 64) * (0x1.0p-23 * magnitude[a] + double(FLT_MIN));
      if (!(std::fabs(double(got[a]) - value[a]) <= tolerance)) return false;
    }
  }
  return true;
}

// One axis of the case's bodies: the case's distribution, from its seed moved on by the axis.
std::vector<float> coordinates(const labkit::Case& c, uint64_t axis) {
  labkit::InputSpec spec = c.input;
  spec.seed += axis;
  return labkit::generate<float>(c.n, spec);
}

std::vector<float4> make_bodies(const labkit::Case& c) {
  const size_t n = c.n;
  const auto x = coordinates(c, 0), y = coordinates(c, 1), z = coordinates(c, 2);
  std::vector<float4> bodies(n);
  for (size_t i = 0; i < n; ++i) bodies[i] = make_float4(x[i], y[i], z[i], 1.f);  // the chapter's unit masses
  return bodies;
}

void bench_case(const labkit::Case& c, double peak_tflops) {
  const int n = int(c.n);
  const std::vector<float4> host = make_bodies(c);
  DeviceBuffer<float4> bodies(host);
  DeviceBuffer<float3> accel{size_t(n)};
  const double interactions = double(n) * double(n);
  double reference_ms = 0;
  for (const Variant& v : variants()) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(bodies.data(), n, accel.data(), stream); }, [&](int) { accel.poison(); }});
    const bool right = sampled_bodies_right(host, accel.download());
    if (reference_ms == 0) reference_ms = t.ms.median;
    const double per_second = interactions / (t.ms.median * 1e-3);
    const double tflops = flops_per_interaction * per_second / 1e12;
    std::printf("%-10s %-30s %9.3f ms %8.1f G interactions/s %6.2f TFLOP/s %5.1f%% of FP32 peak  ratio %5.2f  "
                "(%zu samples, +-%.2f%%)%s\n",
                c.name.c_str(), v.name, t.ms.median, per_second / 1e9, tflops,
                100 * tflops / peak_tflops, reference_ms / t.ms.median, t.ms.count, 100 * t.ms.relative_error,
                right ? "" : "  WRONG OUTPUT");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  labkit::start_benchmark(" (the bandwidth plays no part here: N-body is compute bound)");
  const double peak = fp32_peak_tflops();
  std::printf("FP32 peak %.1f TFLOP/s (SMs x FP32 lanes x 2 x maximum clock; an H100 SXM: 132 x 128 x 2 x 1980 MHz "
              "= 66.9). TFLOP/s below = 20 x n^2 / time; ratio = reference time / time, as the grader computes it\n",
              peak);
  for (const labkit::Case& c : cases) bench_case(c, peak);
  return 0;
}
