// Lab 13 benchmark: the reference all-reduce beside ncclAllReduce (the library anchor, one
// process driving every GPU through ncclCommInitAll) and the starter's algorithm (equal parts,
// synchronous peer copies, one GPU after another) with its bug fixed, at the sizes of
// datasets/13-allreduce.yaml's part-1 performance cases. Each row gives the time by the host's
// clock until every GPU is done, the bus bandwidth (NCCL's convention: 2(g-1)/g x bytes / time)
// and its share of NCCL's. Not a test: it prints numbers for people.
#include "allreduce.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#if LABKIT_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using labkit::DeviceBuffer;
using AllReduce = std::function<void(float* const* data, int gpus, size_t n, cudaStream_t stream)>;

// ---- the starter's algorithm ----------------------------------------------------------------

__global__ void chapter_add_into_kernel(float* sum, const float* addend, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x)
    sum[i] += addend[i];
}

// The starter's algorithm with its parts fixed (the last part takes the remainder): GPU after
// GPU, each sums its part from synchronous peer copies, then fetches the other parts.
void chapter_equal_parts(float* const* data, int gpus, size_t n, cudaStream_t) {
  const size_t part = (n + size_t(gpus) - 1) / size_t(gpus);
  auto begin = [&](int r) { return std::min(n, size_t(r) * part); };
  auto count = [&](int r) { return std::min(n, size_t(r + 1) * part) - begin(r); };
  const int blocks = 2 * labkit::current_device().sm_count;
  for (int r = 0; r < gpus; ++r) {
    CUDA_CHECK(cudaSetDevice(r));
    float* incoming = nullptr;
    CUDA_CHECK(cudaMalloc(&incoming, std::max<size_t>(count(r), 1) * sizeof(float)));
    for (int peer = 0; peer < gpus; ++peer) {
      if (peer == r) continue;
      CUDA_CHECK(cudaMemcpyPeer(incoming, r, data[peer] + begin(r), peer, count(r) * sizeof(float)));
      chapter_add_into_kernel<<<blocks, 256>>>(data[r] + begin(r), incoming, count(r));
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(incoming));
  }
  for (int r = 0; r < gpus; ++r)
    for (int owner = 0; owner < gpus; ++owner)
      if (owner != r)
        CUDA_CHECK(cudaMemcpyPeer(data[r] + begin(owner), r, data[owner] + begin(owner), owner,
                                  count(owner) * sizeof(float)));
  CUDA_CHECK(cudaSetDevice(0));
}

void reference_allreduce(float* const* d, int gpus, size_t n, cudaStream_t stream) {
  ring_allreduce(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], gpus, n, stream);
}

// ---- NCCL ---------------------------------------------------------------------------------

#if LABKIT_HAVE_NCCL
#define NCCL_CHECK(call)                                                                           \
  do {                                                                                             \
    const ncclResult_t result_ = (call);                                                           \
    if (result_ != ncclSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(result_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// One communicator and stream per GPU, made once: what the chapter's NCCL example sets up.
struct NcclGroup {
  explicit NcclGroup(int gpus) : comms(size_t(gpus)), streams(size_t(gpus)) {
    std::vector<int> devices(static_cast<size_t>(gpus));
    for (int g = 0; g < gpus; ++g) devices[size_t(g)] = g;
    NCCL_CHECK(ncclCommInitAll(comms.data(), gpus, devices.data()));
    for (int g = 0; g < gpus; ++g) {
      const labkit::DeviceScope scope(g);
      CUDA_CHECK(cudaStreamCreateWithFlags(&streams[size_t(g)], cudaStreamNonBlocking));
    }
  }
  void all_reduce(float* const* data, size_t n) {
    NCCL_CHECK(ncclGroupStart());
    for (size_t g = 0; g < comms.size(); ++g)
      NCCL_CHECK(ncclAllReduce(data[g], data[g], n, ncclFloat, ncclSum, comms[g], streams[g]));
    NCCL_CHECK(ncclGroupEnd());
  }
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
};
#endif

// ---- one size -----------------------------------------------------------------------------

struct Variant {
  const char* name;
  AllReduce run;
};

// Every GPU's array (GPU g's from the case's seed moved on by g), a pristine copy to restore
// before each sample (the call is in place), and the expected sum with the error a float sum in
// any order may have.
struct Arrays {
  Arrays(int gpus, const labkit::Case& c) : n(c.n), expected(n), tolerance(n, 0.0f) {
    std::vector<double> sum(n, 0.0), magnitude(n, 0.0);
    for (int g = 0; g < gpus; ++g) {
      labkit::InputSpec spec = c.input;
      spec.seed += uint64_t(g);
      const auto host = labkit::generate<float>(n, spec);
      for (size_t i = 0; i < n; ++i) sum[i] += host[i], magnitude[i] += std::fabs(host[i]);
      live.emplace_back(n, g);
      pristine.emplace_back(n, g);
      pristine.back().upload(host);
    }
    for (size_t i = 0; i < n; ++i) {
      expected[i] = float(sum[i]);
      tolerance[i] = float(gpus * double(FLT_EPSILON) * magnitude[i]);
    }
    for (auto& buffer : live) pointers.push_back(buffer.data());
    pointers.resize(allreduce_max_gpus, nullptr);
  }
  void restore() {
    for (size_t g = 0; g < live.size(); ++g) {
      const labkit::DeviceScope scope(static_cast<int>(g));
      CUDA_CHECK(cudaMemcpy(live[g].data(), pristine[g].data(), live[g].bytes(), cudaMemcpyDeviceToDevice));
    }
    labkit::synchronize_all_devices();
  }
  bool right() const {
    for (const auto& buffer : live) {
      const std::vector<float> actual = buffer.download();
      for (size_t i = 0; i < n; ++i)
        if (!(std::fabs(actual[i] - expected[i]) <= tolerance[i])) return false;
    }
    return true;
  }
  size_t n;
  std::vector<DeviceBuffer<float>> live, pristine;
  std::vector<float*> pointers;
  std::vector<float> expected, tolerance;
};

void bench_case(const labkit::Case& c, int gpus, std::vector<Variant>& variants) {
  const size_t n = c.n;
  Arrays arrays(gpus, c);
  const double bus_bytes = 2.0 * (gpus - 1) / gpus * double(n) * sizeof(float);
  double anchor_gbps = 0;  // the first row's (NCCL's, when built with it)
  for (const Variant& v : variants) {
    labkit::TimedCall call;
    call.launch = [&](cudaStream_t stream) { v.run(arrays.pointers.data(), gpus, n, stream); };
    call.prepare = [&](int) { arrays.restore(); };
    call.host_clock = true;  // work on every GPU: one stream's events would miss most of it
    const labkit::TimingStats t = labkit::time_call(call);
    const bool right = arrays.right();
    const double bus_gbps = labkit::gigabytes_per_second(bus_bytes, t.ms.median);
    const double alg_gbps = labkit::gigabytes_per_second(double(n) * sizeof(float), t.ms.median);
    if (anchor_gbps == 0) anchor_gbps = bus_gbps;
    std::printf("%-16s %-34s %9.4f ms  bus %7.1f GB/s  alg %7.1f GB/s  %6.1f%% of %s  (%zu samples, +-%.2f%%)%s\n",
                c.name.c_str(), v.name, t.ms.median, bus_gbps, alg_gbps, 100 * bus_gbps / anchor_gbps,
                variants[0].name, t.ms.count, 100 * t.ms.relative_error, right ? "" : "  WRONG OUTPUT");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // never NVLink multicast on the kit's machines
  labkit::start_benchmark(" (bus bandwidth: 2(g-1)/g x bytes per GPU / time)");
  const int gpus = std::min(labkit::device_count(), allreduce_max_gpus);
  if (gpus < 2) {
    std::printf("SKIPPED: an all-reduce needs 2 GPUs, this machine has %d\n", gpus);
    return labkit::skip_exit_code;
  }
  std::printf("%d GPUs\n", gpus);

  std::vector<Variant> variants;
#if LABKIT_HAVE_NCCL
  NcclGroup nccl(gpus);
  variants.push_back({"ncclAllReduce", [&nccl](float* const* d, int, size_t n, cudaStream_t) { nccl.all_reduce(d, n); }});
#else
  std::printf("(built without NCCL: no library anchor)\n");
#endif
  variants.push_back({"reference solution", reference_allreduce});
  variants.push_back({"starter, its parts fixed", chapter_equal_parts});

  // Part 2's cases time mpi_allreduce in MPI ranks, which this one process does not start.
  for (const labkit::Case& c : cases)
    if (!labkit::runs_in_mpi_ranks(c)) bench_case(c, gpus, variants);
  return 0;
}
