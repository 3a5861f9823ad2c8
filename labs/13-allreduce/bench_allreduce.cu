// Lab 13 benchmark: the reference all-reduce beside ncclAllReduce (the library anchor, one
// process driving every GPU through ncclCommInitAll), the same reference with its peer reads
// replaced by copies staged through host memory, and the starter's algorithm (equal parts,
// synchronous peer copies, one GPU after another) with its bug fixed; then part 3's halves,
// ring_reduce_scatter and ring_allgather, beside ncclReduceScatter and ncclAllGather and the
// starter's halves fixed, and ncclBroadcast from GPU 0; at the sizes of
// datasets/13-allreduce.yaml's part-1 performance cases. Then NCCL's rows again with
// NCCL_P2P_DISABLE=1, from a child process (NCCL reads the variable when a communicator is
// made), so that NVLink and the path without peer-to-peer sit side by side. Each row gives the
// time by the host's clock until every GPU is done, the bus bandwidth in NCCL's convention
// (bytes x 2(g-1)/g / time for an all-reduce, x (g-1)/g for a reduce-scatter or an all-gather,
// x 1 for a broadcast), the algorithm bandwidth (bytes / time) and its share of the bus
// bandwidth of NCCL's row of the same collective over NVLink. Not a test: it prints numbers
// for people.
#include "allreduce.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#if LABKIT_HAVE_NCCL
#include <nccl.h>
#endif

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

extern char** environ;

namespace {

using labkit::DeviceBuffer;
using Run = std::function<void(float* const* data, int gpus, size_t n, cudaStream_t stream)>;

// What a row computes, each in place over every GPU's array of n floats.
enum class Op { allreduce, reduce_scatter, allgather, broadcast };

// NCCL's bus bandwidth factor: the share of the array each GPU's links must carry.
double bus_factor(Op op, int gpus) {
  switch (op) {
    case Op::allreduce: return 2.0 * (gpus - 1) / gpus;
    case Op::reduce_scatter:
    case Op::allgather: return double(gpus - 1) / gpus;
    case Op::broadcast: return 1.0;
  }
  return 1.0;
}

// The contract's slice of GPU g: [g * per, (g + 1) * per) clipped to n, per = ceil(n / gpus).
size_t slice_begin(int g, int gpus, size_t n) { return std::min(n, size_t(g) * ((n + gpus - 1) / gpus)); }
size_t slice_count(int g, int gpus, size_t n) { return slice_begin(g + 1, gpus, n) - slice_begin(g, gpus, n); }

// ---- the starter's algorithm ----------------------------------------------------------------

__global__ void chapter_add_into_kernel(float* sum, const float* addend, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x)
    sum[i] += addend[i];
}

// The starter's halves with its parts fixed (the contract's slices): GPU after GPU, each sums
// its part from synchronous peer copies; then each fetches the other parts.
void chapter_reduce_scatter(float* const* data, int gpus, size_t n, cudaStream_t) {
  const int blocks = 2 * labkit::current_device().sm_count;
  for (int r = 0; r < gpus; ++r) {
    const size_t begin = slice_begin(r, gpus, n), count = slice_count(r, gpus, n);
    CUDA_CHECK(cudaSetDevice(r));
    float* incoming = nullptr;
    CUDA_CHECK(cudaMalloc(&incoming, std::max<size_t>(count, 1) * sizeof(float)));
    for (int peer = 0; peer < gpus; ++peer) {
      if (peer == r) continue;
      CUDA_CHECK(cudaMemcpyPeer(incoming, r, data[peer] + begin, peer, count * sizeof(float)));
      chapter_add_into_kernel<<<blocks, 256>>>(data[r] + begin, incoming, count);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(incoming));
  }
  CUDA_CHECK(cudaSetDevice(0));
}

void chapter_allgather(float* const* data, int gpus, size_t n, cudaStream_t) {
  for (int r = 0; r < gpus; ++r)
    for (int owner = 0; owner < gpus; ++owner)
      if (owner != r)
        CUDA_CHECK(cudaMemcpyPeer(data[r] + slice_begin(owner, gpus, n), r, data[owner] + slice_begin(owner, gpus, n),
                                  owner, slice_count(owner, gpus, n) * sizeof(float)));
  CUDA_CHECK(cudaSetDevice(0));
}

void chapter_equal_parts(float* const* data, int gpus, size_t n, cudaStream_t stream) {
  chapter_reduce_scatter(data, gpus, n, stream);
  chapter_allgather(data, gpus, n, stream);
}

void reference_allreduce(float* const* d, int gpus, size_t n, cudaStream_t stream) {
  ring_allreduce(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], gpus, n, stream);
}
void reference_reduce_scatter(float* const* d, int gpus, size_t n, cudaStream_t stream) {
  ring_reduce_scatter(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], gpus, n, stream);
}
void reference_allgather(float* const* d, int gpus, size_t n, cudaStream_t stream) {
  ring_allgather(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], gpus, n, stream);
}

// ---- the reference's phases staged through host memory ---------------------------------------

// The reference's reduce-scatter and all-gather with each peer read replaced by a copy staged
// through pinned host memory, all GPUs at once on streams of their own: what the reference
// would do without peer access, the path NCCL takes with NCCL_P2P_DISABLE=1 (its shared-memory
// transport). Every byte crosses PCIe twice, once out of its GPU and once into another.
class HostStaged {
public:
  HostStaged(int gpus, size_t n) : gpus_(gpus), n_(n), mail_(size_t(gpus), nullptr), scratch_(size_t(gpus), nullptr),
                                   streams_(size_t(gpus)), sent_(size_t(gpus)), summed_(size_t(gpus)) {
    for (int g = 0; g < gpus; ++g) {
      const labkit::DeviceScope scope(g);
      CUDA_CHECK(cudaMallocHost(&mail_[size_t(g)], std::max<size_t>(n, 1) * sizeof(float)));
      CUDA_CHECK(cudaMalloc(&scratch_[size_t(g)], std::max<size_t>(slice_count(0, gpus, n), 1) * sizeof(float)));
      CUDA_CHECK(cudaStreamCreateWithFlags(&streams_[size_t(g)], cudaStreamNonBlocking));
      CUDA_CHECK(cudaEventCreateWithFlags(&sent_[size_t(g)], cudaEventDisableTiming));
      CUDA_CHECK(cudaEventCreateWithFlags(&summed_[size_t(g)], cudaEventDisableTiming));
    }
  }
  HostStaged(const HostStaged&) = delete;
  HostStaged& operator=(const HostStaged&) = delete;
  ~HostStaged() {
    for (int g = 0; g < gpus_; ++g) {
      const labkit::DeviceScope scope(g);
      cudaFreeHost(mail_[size_t(g)]);
      cudaFree(scratch_[size_t(g)]);
      cudaStreamDestroy(streams_[size_t(g)]);
      cudaEventDestroy(sent_[size_t(g)]);
      cudaEventDestroy(summed_[size_t(g)]);
    }
  }

  // In place over the first n_ floats of each data[g]; returns when every GPU is done.
  void all_reduce(float* const* data) {
    const auto begin = [&](int g) { return slice_begin(g, gpus_, n_); };
    const auto count = [&](int g) { return slice_count(g, gpus_, n_); };
    const auto bytes = [&](int g) { return count(g) * sizeof(float); };
    // Reduce-scatter: each GPU puts the slices it does not own in its own host mailbox...
    for (int g = 0; g < gpus_; ++g) {
      const labkit::DeviceScope scope(g);
      for (int s = 0; s < gpus_; ++s)
        if (s != g)
          CUDA_CHECK(cudaMemcpyAsync(mail_[size_t(g)] + begin(s), data[g] + begin(s), bytes(s), cudaMemcpyDeviceToHost,
                                     streams_[size_t(g)]));
      CUDA_CHECK(cudaEventRecord(sent_[size_t(g)], streams_[size_t(g)]));
    }
    // ...and each GPU fetches its slice from every other mailbox and adds it in, in GPU order.
    for (int r = 0; r < gpus_; ++r) {
      const labkit::DeviceScope scope(r);
      const int blocks = 2 * labkit::current_device().sm_count;
      for (int peer = 0; peer < gpus_; ++peer) {
        if (peer == r || count(r) == 0) continue;
        CUDA_CHECK(cudaStreamWaitEvent(streams_[size_t(r)], sent_[size_t(peer)], 0));
        CUDA_CHECK(cudaMemcpyAsync(scratch_[size_t(r)], mail_[size_t(peer)] + begin(r), bytes(r), cudaMemcpyHostToDevice,
                                   streams_[size_t(r)]));
        chapter_add_into_kernel<<<blocks, 256, 0, streams_[size_t(r)]>>>(data[r] + begin(r), scratch_[size_t(r)], count(r));
      }
      // All-gather: the finished slice goes to the GPU's mailbox, at its own place, which no
      // GPU reads in the reduce-scatter.
      CUDA_CHECK(cudaMemcpyAsync(mail_[size_t(r)] + begin(r), data[r] + begin(r), bytes(r), cudaMemcpyDeviceToHost,
                                 streams_[size_t(r)]));
      CUDA_CHECK(cudaEventRecord(summed_[size_t(r)], streams_[size_t(r)]));
    }
    for (int g = 0; g < gpus_; ++g) {
      const labkit::DeviceScope scope(g);
      for (int owner = 0; owner < gpus_; ++owner) {
        if (owner == g) continue;
        CUDA_CHECK(cudaStreamWaitEvent(streams_[size_t(g)], summed_[size_t(owner)], 0));
        CUDA_CHECK(cudaMemcpyAsync(data[g] + begin(owner), mail_[size_t(owner)] + begin(owner), bytes(owner),
                                   cudaMemcpyHostToDevice, streams_[size_t(g)]));
      }
    }
    labkit::synchronize_all_devices();
  }

private:
  int gpus_;
  size_t n_;
  std::vector<float*> mail_;     // pinned, n floats per GPU: what that GPU hands the others
  std::vector<float*> scratch_;  // on each GPU: one peer's slice at a time
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> sent_, summed_;
};

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
// Every call is in place, the GPUs' calls inside one group so that they launch together.
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
  // n is a multiple of the GPU count for the reduce-scatter and the all-gather (NCCL's slices
  // are n / g each, which are then the contract's).
  void run(Op op, float* const* data, size_t n) {
    const size_t gpus = comms.size(), slice = n / gpus;
    NCCL_CHECK(ncclGroupStart());
    for (size_t g = 0; g < gpus; ++g) {
      switch (op) {
        case Op::allreduce:
          NCCL_CHECK(ncclAllReduce(data[g], data[g], n, ncclFloat, ncclSum, comms[g], streams[g]));
          break;
        case Op::reduce_scatter:
          NCCL_CHECK(ncclReduceScatter(data[g], data[g] + g * slice, slice, ncclFloat, ncclSum, comms[g], streams[g]));
          break;
        case Op::allgather:
          NCCL_CHECK(ncclAllGather(data[g] + g * slice, data[g], slice, ncclFloat, comms[g], streams[g]));
          break;
        case Op::broadcast:
          NCCL_CHECK(ncclBroadcast(data[g], data[g], n, ncclFloat, /*root=*/0, comms[g], streams[g]));
          break;
      }
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
};

const char* nccl_name(Op op) {
  switch (op) {
    case Op::allreduce: return "ncclAllReduce";
    case Op::reduce_scatter: return "ncclReduceScatter";
    case Op::allgather: return "ncclAllGather";
    case Op::broadcast: return "ncclBroadcast";
  }
  return "";
}
#endif

// ---- one size -----------------------------------------------------------------------------

struct Variant {
  std::string name;
  Op op;
  Run run;
  bool nccl = false;  // NCCL's own row: the anchor of its collective, and run again with P2P off
};

// Every GPU's array (GPU g's from the case's seed moved on by g), a pristine copy to restore
// before each sample (every call is in place), and each collective's expected result: the sum
// with the error a float sum in any order may have, and the inputs themselves for the
// all-gather and the broadcast, which copy bit for bit.
struct Arrays {
  Arrays(int gpus, const labkit::Case& c, size_t n) : gpus(gpus), n(n), expected(n), tolerance(n, 0.0f) {
    std::vector<double> sum(n, 0.0), magnitude(n, 0.0);
    for (int g = 0; g < gpus; ++g) {
      labkit::InputSpec spec = c.input;
      spec.seed += uint64_t(g);
      inputs.push_back(labkit::generate<float>(n, spec));
      const auto& host = inputs.back();
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
  bool right(Op op) const {
    const size_t per = (n + size_t(gpus) - 1) / size_t(gpus);
    for (int g = 0; g < gpus; ++g) {
      const std::vector<float> actual = live[size_t(g)].download();
      for (size_t i = 0; i < n; ++i) {
        const size_t owner = i / per;
        const bool sum_right = std::fabs(actual[i] - expected[i]) <= tolerance[i];
        bool ok = true;
        switch (op) {
          case Op::allreduce: ok = sum_right; break;
          case Op::reduce_scatter: ok = owner != size_t(g) || sum_right; break;
          case Op::allgather: ok = std::memcmp(&actual[i], &inputs[owner][i], sizeof(float)) == 0; break;
          case Op::broadcast: ok = std::memcmp(&actual[i], &inputs[0][i], sizeof(float)) == 0; break;
        }
        if (!ok) return false;
      }
    }
    return true;
  }
  int gpus;
  size_t n;
  std::vector<std::vector<float>> inputs;
  std::vector<DeviceBuffer<float>> live, pristine;
  std::vector<float*> pointers;
  std::vector<float> expected, tolerance;
};

// The elements each GPU works on: the case's n, less n % gpus, so that NCCL's reduce-scatter
// and all-gather (n / g per GPU) match the contract's slices.
size_t bench_n(const labkit::Case& c, int gpus) { return c.n - c.n % size_t(gpus); }

// The row each row of a collective is compared with: NCCL's over NVLink where the build has
// NCCL, else the collective's first.
struct Anchor {
  double bus_gbps = 0;
  std::string name;
};
using Anchors = std::map<Op, Anchor>;

// Times every variant on the case's arrays and prints a row each. `anchors`: filled by the
// first row of each collective that has none; `suffix` goes after each name.
void bench_case(const labkit::Case& c, int gpus, const std::vector<Variant>& variants, Anchors& anchors,
                const char* suffix = "") {
  const size_t n = bench_n(c, gpus);
  Arrays arrays(gpus, c, n);
  for (const Variant& v : variants) {
    labkit::TimedCall call;
    call.launch = [&](cudaStream_t stream) { v.run(arrays.pointers.data(), gpus, n, stream); };
    call.prepare = [&](int) { arrays.restore(); };
    call.host_clock = true;  // work on every GPU: one stream's events would miss most of it
    const labkit::TimingStats t = labkit::time_call(call);
    const bool right = arrays.right(v.op);
    const double bytes = double(n) * sizeof(float);
    const double bus_gbps = labkit::gigabytes_per_second(bus_factor(v.op, gpus) * bytes, t.ms.median);
    const double alg_gbps = labkit::gigabytes_per_second(bytes, t.ms.median);
    if (anchors.count(v.op) == 0) anchors[v.op] = {bus_gbps, v.name};
    const Anchor& anchor = anchors[v.op];
    const std::string name = v.name + suffix;
    std::printf("%-16s %-42s %9.4f ms  bus %7.1f GB/s  alg %7.1f GB/s  %6.1f%% of %-17s (%zu samples, +-%.2f%%)%s\n",
                c.name.c_str(), name.c_str(), t.ms.median, bus_gbps, alg_gbps, 100 * bus_gbps / anchor.bus_gbps,
                anchor.name.c_str(), t.ms.count, 100 * t.ms.relative_error, right ? "" : "  WRONG OUTPUT");
    std::fflush(stdout);  // before a child process prints after it
  }
}

}  // namespace

namespace {

#if LABKIT_HAVE_NCCL
std::vector<Variant> nccl_variants(NcclGroup& nccl) {
  std::vector<Variant> variants;
  for (Op op : {Op::allreduce, Op::reduce_scatter, Op::allgather, Op::broadcast})
    variants.push_back({nccl_name(op), op, [&nccl, op](float* const* d, int, size_t n, cudaStream_t) { nccl.run(op, d, n); },
                        true});
  return variants;
}

// NCCL's rows with peer-to-peer off: this program again, in a child process whose environment
// has NCCL_P2P_DISABLE=1 from the start (NCCL reads it when a communicator is made, and keeps
// what it read), timing the case `case_name` alone. `anchors` carries the rows over NVLink,
// which the child's rows are compared with.
void run_p2p_off_child(const std::vector<std::string>& bench_args, const std::string& case_name, const Anchors& anchors) {
  std::string anchor_list;
  for (const auto& [op, anchor] : anchors) anchor_list += std::to_string(int(op)) + "=" + std::to_string(anchor.bus_gbps) + ",";
  std::vector<std::string> args = {"/proc/self/exe", "--nccl-p2p-off", case_name, anchor_list};
  args.insert(args.end(), bench_args.begin(), bench_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = {"NCCL_P2P_DISABLE=1"};
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "NCCL_P2P_DISABLE=", 17) != 0) env.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::fflush(stdout);
  pid_t child = 0;
  if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) != 0) {
    std::printf("%-16s (NCCL with P2P off: the child process did not start: %s)\n", case_name.c_str(), std::strerror(errno));
    return;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::printf("%-16s (NCCL with P2P off: the child process failed, status %d)\n", case_name.c_str(), status);
}

// The child's side: NCCL's rows of one case, with the parent's anchors ("OP=GBPS,...").
int p2p_off_rows(const std::vector<labkit::Case>& cases, const std::string& case_name, const std::string& anchor_list,
                 int gpus) {
  Anchors anchors;
  for (size_t at = 0; at < anchor_list.size();) {
    const size_t comma = anchor_list.find(',', at), equals = anchor_list.find('=', at);
    if (comma == std::string::npos || equals > comma) break;
    const Op op = Op(std::stoi(anchor_list.substr(at, equals - at)));
    anchors[op] = {std::stod(anchor_list.substr(equals + 1, comma - equals - 1)), nccl_name(op)};
    at = comma + 1;
  }
  NcclGroup nccl(gpus);
  const std::vector<Variant> variants = nccl_variants(nccl);
  for (const labkit::Case& c : cases)
    if (c.name == case_name) bench_case(c, gpus, variants, anchors, ", P2P off");
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  // `--nccl-p2p-off CASE ANCHORS`: the child's mode (run_p2p_off_child); every other argument
  // is the benchmark's own, passed on to the child.
  std::string p2p_off_case, anchor_list;
  std::vector<char*> args = {argv[0]};
  std::vector<std::string> bench_args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--nccl-p2p-off") == 0 && i + 2 < argc) {
      p2p_off_case = argv[++i];
      anchor_list = argv[++i];
    } else {
      args.push_back(argv[i]);
      bench_args.emplace_back(argv[i]);
    }
  }
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(int(args.size()), args.data());
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // never NVLink multicast on the kit's machines
  const int gpus = std::min(labkit::device_count(), allreduce_max_gpus);
#if LABKIT_HAVE_NCCL
  if (!p2p_off_case.empty()) return gpus < 2 ? 1 : p2p_off_rows(cases, p2p_off_case, anchor_list, gpus);
#endif
  labkit::start_benchmark(" (bus bandwidth: NCCL's, 2(g-1)/g x bytes per GPU / time for an all-reduce, (g-1)/g for a "
                          "reduce-scatter or an all-gather, 1 for a broadcast)");
  if (gpus < 2) {
    std::printf("SKIPPED: an all-reduce needs 2 GPUs, this machine has %d\n", gpus);
    return labkit::skip_exit_code;
  }
  std::printf("%d GPUs\n", gpus);

  // The reference staged through host memory, sized for the case at hand.
  std::unique_ptr<HostStaged> staged;
  size_t staged_n = 0;
  const Run host_staged = [&](float* const* d, int g, size_t n, cudaStream_t) {
    if (!staged || staged_n != n) staged.reset(), staged = std::make_unique<HostStaged>(g, n), staged_n = n;
    staged->all_reduce(d);
  };

  std::vector<Variant> ours = {
      {"reference solution", Op::allreduce, reference_allreduce},
      {"reference, staged through host memory", Op::allreduce, host_staged},
      {"starter, its parts fixed", Op::allreduce, chapter_equal_parts},
      {"reference ring_reduce_scatter", Op::reduce_scatter, reference_reduce_scatter},
      {"starter's reduce-scatter, fixed", Op::reduce_scatter, chapter_reduce_scatter},
      {"reference ring_allgather", Op::allgather, reference_allgather},
      {"starter's all-gather, fixed", Op::allgather, chapter_allgather},
  };
  std::vector<Variant> variants;
#if LABKIT_HAVE_NCCL
  NcclGroup nccl(gpus);
  const std::vector<Variant> library = nccl_variants(nccl);
  // Each collective's NCCL row first, the anchor of the rows after it.
  for (Op op : {Op::allreduce, Op::reduce_scatter, Op::allgather, Op::broadcast}) {
    for (const Variant& v : library)
      if (v.op == op) variants.push_back(v);
    for (const Variant& v : ours)
      if (v.op == op) variants.push_back(v);
  }
#else
  std::printf("(built without NCCL: no library rows, and no rows with P2P off)\n");
  variants = ours;
#endif

  // Part 2's cases time mpi_allreduce in MPI ranks, which this one process does not start, and
  // part 3's are the same sizes as part 1's, whose rows already hold part 3's functions.
  for (const labkit::Case& c : cases) {
    if (labkit::runs_in_mpi_ranks(c) || c.has("collective")) continue;
    Anchors anchors;
    bench_case(c, gpus, variants, anchors);
#if LABKIT_HAVE_NCCL
    run_p2p_off_child(bench_args, c.name, anchors);
#endif
  }
  return 0;
}
