// Lab 11 benchmark: for each of datasets/11-streams.yaml's performance cases, the three phases
// of the job alone (all copies in, the kernel over all pixels, all copies out) and the slowest
// of them, the bound no pipeline can beat; then the starter's serial version, a version staged
// through pageable memory, the chapter's four streams with few and with more chunks, the
// chapter's chunks with a stream per stage, and the reference solution, each as ms, x the
// bound (the lab's goal: at most 1.15) and the grader's ratio (reference time / its time).
// Part 2's cases (those with `steps`): the chain launched one kernel per step (the starter, the
// anchor the checks time a submission against), a graph captured and instantiated in every call,
// the reference's graph kept and replayed, and two candidates beyond it (a kept graph of
// programmatic dependent launches, on compute capability 9.0 and newer; one persistent
// cooperative kernel with a barrier across the grid between steps), each as ms, microseconds per
// step and the speed-up over one launch per step (the grader's ratio for part 2).
// Other sizes: --dataset with a file of one's own.
// No library does either job, so the bound and the per-step launches are the anchors. Not a
// test: it prints numbers.
#include "chapter_chain.cuh"
#include "pipeline.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <cooperative_groups.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <vector>

namespace {

using labkit::DeviceBuffer;
using labkit::HostBuffer;
constexpr int threads_per_block = 256;

__global__ void bench_merge_kernel(const uint32_t* a, const uint32_t* b, uint32_t* out, size_t n, int rounds) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = merge_element(a[i], b[i], rounds);
}

void launch_merge(const uint32_t* a, const uint32_t* b, uint32_t* out, size_t n, int rounds, cudaStream_t stream) {
  const unsigned blocks = unsigned((n + threads_per_block - 1) / threads_per_block);
  bench_merge_kernel<<<blocks, threads_per_block, 0, stream>>>(a, b, out, n, rounds);
}

struct Job {
  size_t n;
  int rounds;
  HostBuffer<uint32_t> h_a, h_b, h_out;
  DeviceBuffer<uint32_t> d_a, d_b, d_out;
  std::vector<uint32_t> expected;
};

using Variant = std::function<void(Job&, cudaStream_t)>;

// Chunk k, whole, on stream k % stream count (the chapter's loop, with a short last chunk).
void pipelined(Job& job, const std::vector<cudaStream_t>& streams, size_t chunk_count) {
  const size_t chunk = (job.n + chunk_count - 1) / chunk_count;
  size_t k = 0;
  for (size_t begin = 0; begin < job.n; begin += chunk, ++k) {
    const size_t count = std::min(chunk, job.n - begin);
    const size_t bytes = count * sizeof(uint32_t);
    cudaStream_t stream = streams[k % streams.size()];
    cudaMemcpyAsync(job.d_a.data() + begin, job.h_a.data() + begin, bytes, cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(job.d_b.data() + begin, job.h_b.data() + begin, bytes, cudaMemcpyHostToDevice, stream);
    launch_merge(job.d_a.data() + begin, job.d_b.data() + begin, job.d_out.data() + begin, count, job.rounds, stream);
    cudaMemcpyAsync(job.h_out.data() + begin, job.d_out.data() + begin, bytes, cudaMemcpyDeviceToHost, stream);
  }
}

// The starter's shape, but through pageable staging buffers as a program that keeps its data in
// std::vector would: the copies are staged by the driver and block the host.
void through_pageable(Job& job, std::vector<uint32_t>& stage_a, std::vector<uint32_t>& stage_b,
                      std::vector<uint32_t>& stage_out, cudaStream_t stream) {
  const size_t bytes = job.n * sizeof(uint32_t);
  std::copy(job.h_a.data(), job.h_a.data() + job.n, stage_a.data());
  std::copy(job.h_b.data(), job.h_b.data() + job.n, stage_b.data());
  cudaMemcpyAsync(job.d_a.data(), stage_a.data(), bytes, cudaMemcpyHostToDevice, stream);
  cudaMemcpyAsync(job.d_b.data(), stage_b.data(), bytes, cudaMemcpyHostToDevice, stream);
  launch_merge(job.d_a.data(), job.d_b.data(), job.d_out.data(), job.n, job.rounds, stream);
  cudaMemcpyAsync(stage_out.data(), job.d_out.data(), bytes, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  std::copy(stage_out.begin(), stage_out.end(), job.h_out.data());
}

// The chapter's even chunks with a stream per stage instead: every copy in on one stream,
// kernels alternating between two, every copy out on one, chained by an event per chunk and
// stage. The reference does this too, with chunks that are small at both ends of the job.
struct StagedStreams {
  cudaStream_t copy_in, copy_out, kernels[2];
  std::vector<cudaEvent_t> arrived, merged;
  explicit StagedStreams(size_t max_chunks) : arrived(max_chunks), merged(max_chunks) {
    for (cudaStream_t* s : {&copy_in, &copy_out, &kernels[0], &kernels[1]})
      cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
    for (auto* events : {&arrived, &merged})
      for (cudaEvent_t& e : *events) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  }
  ~StagedStreams() {
    for (cudaStream_t s : {copy_in, copy_out, kernels[0], kernels[1]}) cudaStreamDestroy(s);
    for (auto* events : {&arrived, &merged})
      for (cudaEvent_t e : *events) cudaEventDestroy(e);
  }
};

void staged(Job& job, StagedStreams& s, size_t chunk_count) {
  const size_t chunk = (job.n + chunk_count - 1) / chunk_count;
  size_t k = 0;
  for (size_t begin = 0; begin < job.n; begin += chunk, ++k) {
    const size_t count = std::min(chunk, job.n - begin);
    const size_t bytes = count * sizeof(uint32_t);
    cudaMemcpyAsync(job.d_a.data() + begin, job.h_a.data() + begin, bytes, cudaMemcpyHostToDevice, s.copy_in);
    cudaMemcpyAsync(job.d_b.data() + begin, job.h_b.data() + begin, bytes, cudaMemcpyHostToDevice, s.copy_in);
    cudaEventRecord(s.arrived[k], s.copy_in);
    cudaStream_t kernel_stream = s.kernels[k % 2];
    cudaStreamWaitEvent(kernel_stream, s.arrived[k], 0);
    launch_merge(job.d_a.data() + begin, job.d_b.data() + begin, job.d_out.data() + begin, count, job.rounds,
                 kernel_stream);
    cudaEventRecord(s.merged[k], kernel_stream);
    cudaStreamWaitEvent(s.copy_out, s.merged[k], 0);
    cudaMemcpyAsync(job.h_out.data() + begin, job.d_out.data() + begin, bytes, cudaMemcpyDeviceToHost, s.copy_out);
  }
}

double time_ms(Job& job, const Variant& run) {
  labkit::TimedCall call;
  call.launch = [&](cudaStream_t stream) { run(job, stream); };
  call.prepare = [&](int) { job.h_out.poison(); };
  call.host_clock = true;  // several streams and host memory: events on one stream would miss work
  return labkit::time_call(call).ms.median;
}

void print_row(const char* label, const char* name, double ms, double bound_ms, double reference_ms, bool right) {
  std::printf("%-22s %-34s %9.3f ms  %5.2f x bound  ratio %5.3f%s\n", label, name, ms, ms / bound_ms,
              reference_ms > 0 ? reference_ms / ms : 0.0, right ? "" : "  WRONG OUTPUT");
}

void bench_case(const labkit::Case& c) {
  const size_t n = c.n;
  const int rounds = int(c.integer("rounds"));
  const char* label = c.name.c_str();
  labkit::InputSpec b_input = c.input;  // b is drawn like a, from the next seed
  ++b_input.seed;
  Job job{n, rounds, HostBuffer<uint32_t>(n), HostBuffer<uint32_t>(n), HostBuffer<uint32_t>(n),
          DeviceBuffer<uint32_t>(n), DeviceBuffer<uint32_t>(n), DeviceBuffer<uint32_t>(n), {}};
  job.h_a.assign(labkit::generate<uint32_t>(n, c.input));
  job.h_b.assign(labkit::generate<uint32_t>(n, b_input));
  const size_t bytes = n * sizeof(uint32_t);
  // The expected image from the plain kernel (a CPU pass would take seconds), spot-checked.
  job.expected.resize(n);
  cudaMemcpy(job.d_a.data(), job.h_a.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(job.d_b.data(), job.h_b.data(), bytes, cudaMemcpyHostToDevice);
  launch_merge(job.d_a.data(), job.d_b.data(), job.d_out.data(), n, rounds, nullptr);
  cudaMemcpy(job.expected.data(), job.d_out.data(), bytes, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < n; i += 4099)
    if (merge_element(job.h_a[i], job.h_b[i], rounds) != job.expected[i]) std::printf("KERNEL DISAGREES WITH CPU\n");

  // The three phases alone.
  const double copy_in_ms = time_ms(job, [bytes](Job& j, cudaStream_t s) {
    cudaMemcpyAsync(j.d_a.data(), j.h_a.data(), bytes, cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(j.d_b.data(), j.h_b.data(), bytes, cudaMemcpyHostToDevice, s);
  });
  const double compute_ms = time_ms(job, [](Job& j, cudaStream_t s) {
    launch_merge(j.d_a.data(), j.d_b.data(), j.d_out.data(), j.n, j.rounds, s);
  });
  const double copy_out_ms = time_ms(job, [bytes](Job& j, cudaStream_t s) {
    cudaMemcpyAsync(j.h_out.data(), j.d_out.data(), bytes, cudaMemcpyDeviceToHost, s);
  });
  const double bound_ms = std::max({copy_in_ms, compute_ms, copy_out_ms});
  std::printf("%-22s %d rounds: all copies in %.3f ms (%.1f GB/s), kernel %.3f ms, all copies out %.3f ms "
              "(%.1f GB/s); one after another %.3f ms; bound (slowest alone) %.3f ms\n",
              label, rounds, copy_in_ms, labkit::gigabytes_per_second(2.0 * bytes, copy_in_ms), compute_ms, copy_out_ms,
              labkit::gigabytes_per_second(double(bytes), copy_out_ms), copy_in_ms + compute_ms + copy_out_ms,
              bound_ms);

  std::vector<cudaStream_t> streams(4);
  for (cudaStream_t& s : streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  StagedStreams staged_streams(16);
  std::vector<uint32_t> stage_a(n), stage_b(n), stage_out(n);

  const struct {
    const char* name;
    Variant run;
  } variants[] = {
      {"starter: one stream, serial",
       [&](Job& j, cudaStream_t s) { pipelined(j, {s}, 1); }},
      {"pageable staging, one stream",
       [&](Job& j, cudaStream_t s) { through_pageable(j, stage_a, stage_b, stage_out, s); }},
      {"chapter: 4 streams, 4 chunks", [&](Job& j, cudaStream_t) { pipelined(j, streams, 4); }},
      {"chapter: 4 streams, 16 chunks", [&](Job& j, cudaStream_t) { pipelined(j, streams, 16); }},
      {"4 streams, 96 chunks", [&](Job& j, cudaStream_t) { pipelined(j, streams, 96); }},
      {"stream per stage, 16 chunks", [&](Job& j, cudaStream_t) { staged(j, staged_streams, 16); }},
      {"reference solution",
       [](Job& j, cudaStream_t s) {
         merge_pipelined(j.h_a.data(), j.h_b.data(), j.h_out.data(), j.n, j.rounds, j.d_a.data(), j.d_b.data(),
                         j.d_out.data(), s);
       }},
  };
  // All timed first, the reference last (the ratio column needs its time), then printed.
  std::vector<double> ms;
  std::vector<bool> right;
  for (const auto& v : variants) {
    ms.push_back(time_ms(job, v.run));
    right.push_back(std::equal(job.expected.begin(), job.expected.end(), job.h_out.data()));
  }
  const double reference_ms = ms.back();
  for (size_t i = 0; i < ms.size(); ++i) print_row(label, variants[i].name, ms[i], bound_ms, reference_ms, right[i]);
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
}

// ---- part 2: launch cost ----------------------------------------------------------------------

struct ChainJob {
  size_t n;
  int steps;
  DeviceBuffer<uint32_t> d_in, d_out, d_work;
};

// The chain captured into a graph, instantiated, launched and destroyed in one call: what a
// first try at graphs often does, paying for the capture and the instantiation every time.
void graph_every_call(ChainJob& job, cudaStream_t capture_stream, cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal);
  chapter_chain::mix_chain_per_step(job.d_in.data(), job.d_out.data(), job.d_work.data(), job.n, job.steps,
                                    capture_stream);
  cudaStreamEndCapture(capture_stream, &graph);
  cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphLaunch(exec, stream);
  cudaGraphExecDestroy(exec);  // destruction waits for nothing: the launch still runs
  cudaGraphDestroy(graph);
}

// Step kernels for the candidates beyond the reference: each step's offset comes as a parameter,
// as in the reference.
__global__ void pdl_step_kernel(const uint32_t* previous, uint32_t* next, size_t n, size_t offset, int step) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched early, beside the previous step's last blocks: wait here for its results (the
  // previous step triggers at its end, implicitly).
  cudaGridDependencySynchronize();
#endif
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  size_t partner = i + offset;
  if (partner >= n) partner -= n;
  next[i] = chain_mix(previous[i], previous[partner], step);
}

// Every step in one kernel, with a barrier across the grid between steps. Its blocks must all be
// resident at once (cudaLaunchCooperativeKernel refuses a grid that cannot be). The previous
// step's array is read through L2 (__ldcg): other SMs wrote it since this SM may last have cached it.
__global__ void persistent_chain_kernel(const uint32_t* d_in, uint32_t* d_out, uint32_t* d_work, size_t n, int steps) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const uint32_t* previous = d_in;
  for (int step = 0; step < steps; ++step) {
    uint32_t* next = chapter_chain::step_output(step, steps, d_out, d_work);
    const size_t offset = chain_offset(step, n);
    for (size_t i = grid.thread_rank(); i < n; i += grid.size()) {
      size_t partner = i + offset;
      if (partner >= n) partner -= n;
      next[i] = chain_mix(__ldcg(previous + i), __ldcg(previous + partner), step);
    }
    grid.sync();
    previous = next;
  }
}

// A graph of programmatic dependent launches, captured once for `job` and kept; false where
// this GPU or the capture does not allow it.
struct PdlGraph {
  cudaGraphExec_t exec = nullptr;
  PdlGraph(ChainJob& job, cudaStream_t capture_stream) {
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    if (major < 9 || job.n == 0 || job.steps == 0) return;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(unsigned((job.n + chapter_chain::threads_per_block - 1) / chapter_chain::threads_per_block));
    config.blockDim = dim3(chapter_chain::threads_per_block);
    config.stream = capture_stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    cudaGraph_t graph = nullptr;
    if (cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return;
    const uint32_t* previous = job.d_in.data();
    for (int step = 0; step < job.steps; ++step) {
      uint32_t* next = chapter_chain::step_output(step, job.steps, job.d_out.data(), job.d_work.data());
      cudaLaunchKernelEx(&config, pdl_step_kernel, previous, next, job.n, chain_offset(step, job.n), step);
      previous = next;
    }
    const bool captured = cudaStreamEndCapture(capture_stream, &graph) == cudaSuccess;
    if (!captured || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) exec = nullptr;
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
  }
  ~PdlGraph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

void persistent_chain(ChainJob& job, cudaStream_t stream) {
  if (job.n == 0) return;
  if (job.steps == 0) {
    cudaMemcpyAsync(job.d_out.data(), job.d_in.data(), job.n * sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream);
    return;
  }
  // One block per SM at most: a barrier over fewer blocks is cheaper, and the arrays are small.
  int sms = 0, resident_per_sm = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident_per_sm, persistent_chain_kernel,
                                                chapter_chain::threads_per_block, 0);
  const size_t needed = (job.n + chapter_chain::threads_per_block - 1) / chapter_chain::threads_per_block;
  const size_t most = resident_per_sm > 0 ? size_t(sms) : 1;  // none resident: the launch says so
  const unsigned blocks = unsigned(std::min(needed, most));
  const uint32_t* d_in = job.d_in.data();
  uint32_t* d_out = job.d_out.data();
  uint32_t* d_work = job.d_work.data();
  size_t n = job.n;
  int steps = job.steps;
  void* arguments[] = {&d_in, &d_out, &d_work, &n, &steps};
  cudaLaunchCooperativeKernel(reinterpret_cast<void*>(persistent_chain_kernel), dim3(blocks),
                              dim3(chapter_chain::threads_per_block), arguments, 0, stream);
}

void bench_chain_case(const labkit::Case& c) {
  const char* label = c.name.c_str();
  const int steps = int(c.integer("steps"));
  ChainJob job{c.n, steps, DeviceBuffer<uint32_t>(labkit::generate<uint32_t>(c.n, c.input)),
               DeviceBuffer<uint32_t>(c.n), DeviceBuffer<uint32_t>(c.n)};
  // The expected chain from the per-step launches (the checks hold those to the CPU).
  chapter_chain::mix_chain_per_step(job.d_in.data(), job.d_out.data(), job.d_work.data(), job.n, steps, nullptr);
  const std::vector<uint32_t> expected = job.d_out.download();
  std::printf("%-22s %d steps over %zu elements (%.0f KiB)\n", label, steps, c.n, c.n * sizeof(uint32_t) / 1024.0);

  cudaStream_t capture_stream = nullptr;
  cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking);
  const PdlGraph pdl(job, capture_stream);
  using ChainVariant = std::function<void(ChainJob&, cudaStream_t)>;
  const struct {
    const char* name;
    ChainVariant run;
    bool available;
  } variants[] = {
      {"starter: one launch per step",
       [](ChainJob& j, cudaStream_t s) {
         chapter_chain::mix_chain_per_step(j.d_in.data(), j.d_out.data(), j.d_work.data(), j.n, j.steps, s);
       },
       true},
      {"graph built in every call",
       [capture_stream](ChainJob& j, cudaStream_t s) { graph_every_call(j, capture_stream, s); }, true},
      {"reference solution: graph kept",
       [](ChainJob& j, cudaStream_t s) {
         mix_chain(j.d_in.data(), j.d_out.data(), j.d_work.data(), j.n, j.steps, s);
       },
       true},
      {"graph kept, dependent launch", [&pdl](ChainJob&, cudaStream_t s) { cudaGraphLaunch(pdl.exec, s); },
       pdl.exec != nullptr},
      {"persistent kernel, grid barrier", [](ChainJob& j, cudaStream_t s) { persistent_chain(j, s); }, true},
  };
  std::vector<double> ms;
  std::vector<bool> right;
  for (const auto& v : variants) {
    if (!v.available) {
      ms.push_back(0);
      right.push_back(false);
      continue;
    }
    labkit::TimedCall call;
    call.launch = [&](cudaStream_t stream) { v.run(job, stream); };
    call.prepare = [&](int) { job.d_out.poison(); };
    try {
      ms.push_back(labkit::time_call(call).ms.median);  // events on the stream: all the work is on it
      right.push_back(job.d_out.download() == expected);
    } catch (const std::exception& error) {  // a candidate this GPU refuses (a cooperative launch too large)
      std::printf("%-22s %-34s failed: %s\n", label, v.name, error.what());
      cudaGetLastError();
      ms.push_back(0);
      right.push_back(false);
    }
  }
  cudaStreamDestroy(capture_stream);
  const double per_step_ms = ms.front();
  for (size_t i = 0; i < ms.size(); ++i) {
    if (variants[i].available && ms[i] == 0) continue;  // failed, said above
    if (!variants[i].available) {
      std::printf("%-22s %-34s not available here (compute capability 9.0 and newer)\n", label, variants[i].name);
      continue;
    }
    std::printf("%-22s %-34s %9.3f ms  %6.2f us per step  ratio %5.3f%s\n", label, variants[i].name, ms[i],
                ms[i] * 1e3 / std::max(steps, 1), per_step_ms / ms[i], right[i] ? "" : "  WRONG OUTPUT");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  labkit::start_benchmark(" (times by the host's clock to the end of all device work)");
  for (const labkit::Case& c : cases) c.has("steps") ? bench_chain_case(c) : bench_case(c);
  return 0;
}
