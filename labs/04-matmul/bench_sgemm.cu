// Lab 04 benchmark: the reference solution beside cublasSgemm (FP32, TF32 off: the library
// anchor) and the ladder's other kernels (the tiled chapter's shared-memory kernel, the OpenCL
// chapter's coalesced and uncoalesced naive kernels), in ms, TFLOP/s and % of cuBLAS, at the
// shapes of datasets/04-matmul.yaml's performance cases. Part 2's shapes (`gemm: bf16`): the
// reference's bf16_gemm beside cublasGemmEx (BF16 in, FP32 C and compute: the library anchor)
// and the part's starter, the tiled kernel reading BF16. Not a test: it prints numbers for
// people to read. Each output is compared with cuBLAS's.
#include "sgemm.h"
#include "sgemm_anchors.cuh"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using labkit::DeviceBuffer;

struct Variant {
  const char* name;
  sgemm_anchors::SgemmFn* run;
};

const Variant variants[] = {
    {"cublasSgemm (FP32)", sgemm_anchors::cublas_sgemm},  // first: the others are compared with it
    {"cublasSgemm (pedantic)", sgemm_anchors::cublas_sgemm_pedantic},
    {"reference solution", sgemm},
    {"chapter: tiled 32x32", sgemm_anchors::chapter_tiled},
    {"naive coalesced", sgemm_anchors::naive_coalesced},
    {"naive uncoalesced (starter)", sgemm_anchors::naive_uncoalesced},
};

// Largest difference from cuBLAS's output, in units of a bound that an FP32 sum of k products
// of numbers in [-1, 1] stays well inside whatever its order.
double worst_difference(const std::vector<float>& expected, const std::vector<float>& actual, int k) {
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double diff = std::fabs(double(actual[i]) - double(expected[i]));
    worst = std::max(worst, std::isnan(diff) ? INFINITY : diff);
  }
  return worst / (64 * 0x1.0p-24 * k);
}

struct Shape {
  int m, n, k;
  bool bf16;  // part 2's bf16_gemm
  bool operator==(const Shape& other) const {
    return m == other.m && n == other.n && k == other.k && bf16 == other.bf16;
  }
};

// A shape and the cases that have it: rungs of one shape differ only in the anchor they are
// graded against, and every row here is timed beside every anchor, so each shape runs once.
struct ShapeCases {
  Shape shape;
  labkit::InputSpec input;  // the first case's: one input per shape
  std::string names;
};

std::vector<ShapeCases> distinct_shapes(const std::vector<labkit::Case>& cases) {
  std::vector<ShapeCases> shapes;
  for (const labkit::Case& c : cases) {
    const bool bf16 = c.has("gemm") && c.params.at("gemm") == "bf16";
    const Shape shape{int(c.integer("m")), int(c.n), int(c.integer("k")), bf16};
    const auto same = std::find_if(shapes.begin(), shapes.end(), [&](const ShapeCases& s) { return s.shape == shape; });
    if (same == shapes.end())
      shapes.push_back({shape, c.input, c.name});
    else
      same->names += ", " + c.name;
  }
  return shapes;
}

// One row per variant on the shape: its median time, TFLOP/s and share of the first variant's
// (cuBLAS's) rate, and whether its output agrees with cuBLAS's within the sums' rounding.
template <typename Variant, size_t count, typename T>
void print_rows(const Variant (&rows)[count], int m, int n, int k, const DeviceBuffer<T>& a,
                const DeviceBuffer<T>& b, DeviceBuffer<float>& c) {
  const double flop = 2.0 * m * n * k;
  std::vector<float> cublas_output;
  double cublas_ms = 0;
  for (const Variant& v : rows) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(m, n, k, 1.f, a.data(), b.data(), 0.f, c.data(), stream); },
         [&](int) { c.poison(); }});
    const std::vector<float> output = c.download();
    if (cublas_output.empty()) {
      cublas_output = output;
      cublas_ms = t.ms.median;
    }
    const double tflops = flop / (t.ms.median * 1e-3) * 1e-12;
    const bool right = worst_difference(cublas_output, output, k) <= 1;
    std::printf("  %-28s %10.4f ms %8.2f TFLOP/s %7.1f%% of cuBLAS  (%zu samples, +-%.2f%%)%s\n", v.name,
                t.ms.median, tflops, 100 * cublas_ms / t.ms.median, t.ms.count, 100 * t.ms.relative_error,
                right ? "" : "  WRONG OUTPUT");
  }
}

// B is drawn like A, from the next seed.
void bench_shape(const ShapeCases& cases) {
  const int m = cases.shape.m, n = cases.shape.n, k = cases.shape.k;
  const double flop = 2.0 * m * n * k;
  labkit::InputSpec b_input = cases.input;
  ++b_input.seed;
  DeviceBuffer<float> a(labkit::generate<float>(size_t(m) * k, cases.input));
  DeviceBuffer<float> b(labkit::generate<float>(size_t(k) * n, b_input));
  DeviceBuffer<float> c(size_t(m) * n);

  std::printf("\n%s: m=%d n=%d k=%d (%.1f GFLOP), C = A B (alpha 1, beta 0)\n", cases.names.c_str(), m, n, k,
              flop * 1e-9);
  print_rows(variants, m, n, k, a, b, c);
}

struct Bf16Variant {
  const char* name;
  sgemm_anchors::Bf16GemmFn* run;
};

const Bf16Variant bf16_variants[] = {
    {"cublasGemmEx (BF16, FP32 C)", sgemm_anchors::cublas_bf16_gemm},  // first: the others are compared with it
    {"reference solution", bf16_gemm},
    {"starter: FP32 tiled, BF16 in", sgemm_anchors::bf16_fp32_tiled},
};

// The case's distribution drawn in FP32 and rounded to BF16 on the GPU.
DeviceBuffer<__nv_bfloat16> bf16_input(size_t count, const labkit::InputSpec& spec) {
  const DeviceBuffer<float> floats(labkit::generate<float>(count, spec));
  DeviceBuffer<__nv_bfloat16> out(count);
  sgemm_anchors::round_to_bf16_kernel<<<1024, 256>>>(floats.data(), count, out.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  return out;
}

// Part 2's rows. Products of BF16 values are exact in FP32, so two FP32-accumulating GEMMs
// differ only by their sums' rounding: the same bound as the SGEMM rows.
void bench_bf16_shape(const ShapeCases& cases) {
  const int m = cases.shape.m, n = cases.shape.n, k = cases.shape.k;
  const double flop = 2.0 * m * n * k;
  labkit::InputSpec b_input = cases.input;
  ++b_input.seed;
  DeviceBuffer<__nv_bfloat16> a = bf16_input(size_t(m) * k, cases.input);
  DeviceBuffer<__nv_bfloat16> b = bf16_input(size_t(k) * n, b_input);
  DeviceBuffer<float> c(size_t(m) * n);

  std::printf("\n%s: m=%d n=%d k=%d (%.1f GFLOP), C = A B in BF16 with FP32 C (alpha 1, beta 0)\n",
              cases.names.c_str(), m, n, k, flop * 1e-9);
  print_rows(bf16_variants, m, n, k, a, b, c);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  labkit::start_benchmark();
  for (const ShapeCases& shape : distinct_shapes(cases)) {
    if (shape.shape.bf16)
      bench_bf16_shape(shape);
    else
      bench_shape(shape);
  }
  return 0;
}
