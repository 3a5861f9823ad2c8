// Lab 12 benchmark: first the machine (what one GPU pays to reach another, and what a switch
// of the current device costs), then the reference solution on 1 GPU and on 2 GPUs (the
// speed-up is the lab's point: the target is 1.6x or more), beside the chapter's single-GPU
// three-kernel elimination, at the sizes of datasets/12-gauss-multi-gpu.yaml's part-1
// performance cases and its benchmark cases. Every call is timed by the host's clock to the end
// of the work on every GPU. Not a test: it prints numbers for people to read.
#include "chapter_gauss.cuh"
#include "gauss.h"
#include "peer_copies.cuh"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace {

using labkit::DeviceBuffer;
// Past this the chapter's elimination takes seconds a call, and its rows minutes: the
// benchmark times it on the smaller sizes only.
constexpr int chapter_max_n = 8192;

// ---- inputs and checking ----------------------------------------------------------------

// Rows dominant by the case's `dominance` times their off-diagonal sum; b = A x_true (as in the
// lab's checks), x_true uniform in [-1, 1] from the next seed.
void make_system(const labkit::Case& c, std::vector<float>& a, std::vector<float>& b) {
  const int n = int(c.n);
  const double diagonal_factor = 1 + c.number("dominance", 0.5);
  a = labkit::generate<float>(size_t(n) * n, c.input);
  const std::vector<float> x_true =
      labkit::generate<float>(size_t(n), {labkit::Distribution::uniform, c.input.seed + 1, -1, 1});
  b.assign(size_t(n), 0.f);
  labkit::parallel_chunks(size_t(n), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      double off = 0;
      for (size_t j = 0; j < size_t(n); ++j)
        if (j != i) off += std::fabs(a[i * n + j]);
      a[i * n + i] = float(diagonal_factor * off + 1);
      double sum = 0;
      for (size_t j = 0; j < size_t(n); ++j) sum += double(a[i * n + j]) * x_true[j];
      b[i] = float(sum);
    }
  });
}

double scaled_residual(int n, const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& x) {
  double residual = 0, a_norm = 0, x_norm = 0, b_norm = 0;
  for (size_t i = 0; i < size_t(n); ++i) {
    double sum = 0, norm = 0;
    for (size_t j = 0; j < size_t(n); ++j) sum += double(a[i * n + j]) * x[j], norm += std::fabs(a[i * n + j]);
    residual = std::max(residual, std::fabs(b[i] - sum));
    a_norm = std::max(a_norm, norm);
    x_norm = std::max(x_norm, std::fabs(double(x[i])));
    b_norm = std::max(b_norm, std::fabs(double(b[i])));
  }
  return residual / (a_norm * x_norm + b_norm);
}

// ---- the machine: peer copies and device switches ---------------------------------------
// `nvidia-smi topo -m` names each link between two GPUs (NV18: NVLink; PIX, PHB, SYS: PCIe
// through a switch, a host bridge or across CPU sockets). These rows time what the link
// gives: a large copy's bandwidth and a 4-byte copy's latency, with peer access on (the copy
// goes GPU to GPU) and off (the driver stages the same cudaMemcpyPeerAsync through host
// memory). The measurement is peer_copies.cuh's, which part 3's checks compare with yours. The
// copies are the dataset's peer cases: n bytes, `repeats` copies, `measure: latency` for a copy
// small enough that its time is the link's latency, else its bandwidth.

bool is_peer_copy(const labkit::Case& c) { return c.has("peer"); }

void print_peer_copy(const labkit::Case& c, int from, int to) {
  const double ms = peer_copies::peer_copy_ms(from, to, c.n, int(c.integer("repeats")));
  if (c.has("measure") && c.params.at("measure") == "latency")
    std::printf("   %s: %6.1f us", c.name.c_str(), ms * 1e3);
  else
    std::printf("   %s: %8.1f GB/s", c.name.c_str(), double(c.n) / (ms * 1e6));
}

void bench_peer_copies(const std::vector<labkit::Case>& copies, int from, int to) {
  for (const bool peer_on : {true, false}) {
    if (peer_on && !peer_copies::direct_path(to, from)) {
      std::printf("GPU %d -> GPU %d  peer access on: not possible here (no direct path)\n", from, to);
      continue;
    }
    const peer_copies::PeerAccessScope access(from, to, peer_on);
    std::printf("GPU %d -> GPU %d  peer access %-3s", from, to, peer_on ? "on" : "off");
    for (const labkit::Case& c : copies) print_peer_copy(c, from, to);
    std::printf("\n");
  }
}

// What one host thread driving every GPU pays per switch of the current device.
void bench_device_switch() {
  const int gpus = labkit::device_count();
  constexpr int switches = 100000;
  const double ns = labkit::host_clock_ms([&] {
                      for (int i = 0; i < switches; ++i) CUDA_CHECK(cudaSetDevice(i % gpus));
                    }) * 1e6 / switches;
  CUDA_CHECK(cudaSetDevice(0));
  std::printf("cudaSetDevice %s: %.0f ns per call\n", gpus > 1 ? "switching between GPUs" : "to the current GPU (one GPU)",
              ns);
}

void bench_machine(const std::vector<labkit::Case>& cases) {
  std::vector<labkit::Case> copies;
  std::copy_if(cases.begin(), cases.end(), std::back_inserter(copies), is_peer_copy);
  const int gpus = labkit::device_count();
  if (gpus < 2) std::printf("one GPU visible: no peer copies to time\n");
  for (int from = 0; from < gpus; ++from)
    for (int to = 0; to < gpus; ++to)
      if (from != to) bench_peer_copies(copies, from, to);
  bench_device_switch();
}

// ---- the solver --------------------------------------------------------------------------

struct Row {
  const char* name;
  std::function<void(const float*, const float*, float*, int, cudaStream_t)> run;
  bool needs_two_gpus;
};

void bench_size(const labkit::Case& c) {
  const int n = int(c.n);
  std::vector<float> a_host, b_host;
  make_system(c, a_host, b_host);
  const labkit::DeviceScope on_gpu0(0);
  DeviceBuffer<float> a(a_host.size(), 0), b(b_host.size(), 0), x(size_t(n), 0);
  a.upload(a_host);
  b.upload(b_host);
  const bool two_gpus = labkit::device_count() >= 2;

  std::vector<Row> rows = {
      {"reference, 1 GPU", [](const float* a, const float* b, float* x, int n, cudaStream_t s) { gauss_solve(a, b, x, n, 1, s); }, false},
      {"reference, 2 GPUs", [](const float* a, const float* b, float* x, int n, cudaStream_t s) { gauss_solve(a, b, x, n, 2, s); }, true},
  };
  std::unique_ptr<chapter_gauss::OneGpuSolver> chapter;
  if (n <= chapter_max_n) {
    chapter = std::make_unique<chapter_gauss::OneGpuSolver>(n);
    rows.push_back({"chapter: 1 GPU, 3 kernels",
                    [&chapter](const float* a, const float* b, float* x, int n, cudaStream_t s) { (*chapter)(a, b, x, n, s); },
                    false});
  }

  const double flops = 2.0 / 3.0 * double(n) * n * n;
  double one_gpu_ms = 0;
  for (const Row& row : rows) {
    if (row.needs_two_gpus && !two_gpus) {
      std::printf("n=%-6d %-28s not run: needs 2 GPUs, this machine has %d\n", n, row.name, labkit::device_count());
      continue;
    }
    labkit::TimedCall call{[&](cudaStream_t stream) { row.run(a.data(), b.data(), x.data(), n, stream); },
                           [&](int) { x.poison(); }};
    call.host_clock = true;
    const labkit::TimingStats t = labkit::time_call(call);
    const double residual = scaled_residual(n, a_host, b_host, x.download());
    const bool right = residual <= 50 * std::sqrt(double(n)) * 1.1920929e-7;
    if (one_gpu_ms == 0) one_gpu_ms = t.ms.median;
    std::printf("n=%-6d %-28s %10.2f ms %8.0f GFLOP/s  speed-up vs reference on 1 GPU %5.2fx  (%zu samples, +-%.2f%%)"
                "  residual %.2g%s\n",
                n, row.name, t.ms.median, flops / (t.ms.median * 1e6), one_gpu_ms / t.ms.median, t.ms.count,
                100 * t.ms.relative_error, residual, right ? "" : "  WRONG OUTPUT");
  }
}

// Part 1's solves, one per size: at a size that two cases share, the reference is timed on 1
// and 2 GPUs once, whatever each case compares it with when graded.
std::vector<labkit::Case> one_solve_per_size(const std::vector<labkit::Case>& cases) {
  std::vector<labkit::Case> solves;
  for (const labkit::Case& c : cases) {
    if (is_peer_copy(c) || labkit::runs_in_mpi_ranks(c)) continue;
    if (solves.empty() || solves.back().n != c.n) solves.push_back(c);
  }
  return solves;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  labkit::start_benchmark(" (times by the host clock, to the end of the work on every GPU)");
  std::printf("GPUs visible: %d. GFLOP/s counts 2n^3/3 operations.\n", labkit::device_count());
  bench_machine(cases);
  for (const labkit::Case& c : one_solve_per_size(cases)) bench_size(c);
  return 0;
}
