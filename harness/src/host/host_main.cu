// The host's main: `lab-NN-host --module PATH --scratch DIR` (socket on fd 3), started by a
// lab's checks. Order matters: root is given up, CUDA initialised and the sandbox entered
// before the submission's module is loaded, so nothing the student wrote runs with more than
// the sandbox allows, constructors included.
#include "labkit/host.h"

#include "labkit/cuda_check.h"
#include "labkit/defences.h"
#include "labkit/device.h"
#include "labkit/sandbox.h"
#include "labkit/sample_start.h"
#include "labkit/shared_memory.h"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

namespace {

using namespace labkit;

constexpr int socket_fd = 3;

// Spins for `ns` nanoseconds of the GPU's global timer: a stand-in for an honest kernel of
// that length, whose round trip the checks measure with no submission involved.
__global__ void spin_kernel(std::uint64_t ns) {
  std::uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  while (now - start < ns);
}

// Shared memory is not cleared between kernels, so filling it with a pattern before a call
// makes a read of a slot no thread wrote give the same wrong answer every time.
__global__ void fill_shared_memory_kernel(std::uint32_t pattern, std::size_t words) {
  extern __shared__ std::uint32_t shared[];
  for (std::size_t i = threadIdx.x; i < words; i += blockDim.x) shared[i] = pattern;
  __syncthreads();
  // Keep the stores: a shared word the kernel never reads could otherwise be dropped.
  if (shared[(threadIdx.x * 7919u) % words] != pattern) __trap();
}

void fill_shared_memory(std::uint32_t pattern, cudaStream_t stream) {
  int device = 0, optin = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaFuncSetAttribute(fill_shared_memory_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  fill_shared_memory_kernel<<<2 * sms, 1024, optin, stream>>>(pattern, std::size_t(optin) / sizeof(std::uint32_t));
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

class Host {
public:
  Host(void* module) : module_(module) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }

  wire::Reply handle(const wire::Request& request, int fd) {
    switch (request.op) {
      case wire::Op::map:
        mappings_.map(request, fd);
        return {};
      case wire::Op::unmap:
        mappings_.remove(request.id);
        return {};
      case wire::Op::poison_shared_memory:
        fill_shared_memory(request.pattern, stream_);
        return {};
      case wire::Op::stage:
        mappings_.stage(request.id);
        return {};
      case wire::Op::noop:
        mappings_.fill_managed(request, /*reset_used=*/false);
        return timed(request, [&] { spin_kernel<<<1, 1, 0, stream_>>>(request.spin_ns); return std::uint64_t(0); });
      case wire::Op::call:
        return call(request);
    }
    return failure(wire::Status::failed, "unknown request");
  }

private:
  const ContractFunction* find(const char* name) const {
    for (const ContractFunction* f = contract_functions; f->name != nullptr; ++f)
      if (std::strncmp(f->name, name, wire::name_bytes) == 0) return f;
    return nullptr;
  }

  void* symbol(const ContractFunction& function) {
    auto& address = symbols_[function.name];
    if (address == nullptr && module_ != nullptr) address = dlsym(module_, function.name);
    return address;
  }

  wire::Reply call(const wire::Request& request) {
    const ContractFunction* function = find(request.function);
    if (function == nullptr || function->argument_count != request.argument_count)
      return failure(wire::Status::failed, std::string("the contract has no function ") + request.function);
    void* address = symbol(*function);
    if (address == nullptr)
      return failure(wire::Status::failed,
                     std::string(function->name) + " is not defined in your code: define it exactly as the lab's "
                     "header declares it, and include that header so it keeps its extern \"C\" name");
    // Managed inputs are copied in before the events start; the checks' clock sees the copy,
    // and the empty call makes the same one.
    const std::string advised = mappings_.fill_managed(request, /*reset_used=*/true);
    if (!advised.empty())
      return failure(wire::Status::failed,
                     "the managed input had " + advised + " on it before the call began: some code of yours ran "
                     "before the call (another thread?); advise and prefetch inside the call, on its stream");
    wire::Reply reply = timed(request, [&] { return function->invoke(address, request, mappings_, stream_); });
    if (!request.timed && reply.status == wire::Status::ok) mappings_.copy_back_managed(request);
    return reply;
  }

  // Runs `body` with events (or, when asked, our clock) around it when timed, then waits for
  // every device, so work left on other streams or GPUs is finished (and counted by the
  // checks' clock) before the reply. Each call starts on device 0, whichever device the
  // last one left current.
  template <class Body>
  wire::Reply timed(const wire::Request& request, Body body) {
    wire::Reply reply;
    if (request.timed) prepare_cache_as_the_reference_finds_it(request.host_clock);
    CUDA_CHECK(cudaSetDevice(0));
    const bool events = request.timed && !request.host_clock;
    const auto started = std::chrono::steady_clock::now();
    if (events) CUDA_CHECK(cudaEventRecord(start_, stream_));
    reply.return_bits = body();
    cudaError_t status = cudaGetLastError();
    const cudaError_t reset = cudaSetDevice(0);
    if (status == cudaSuccess) status = reset;
    if (events && status == cudaSuccess) status = cudaEventRecord(stop_, stream_);
    const cudaError_t synced = synchronize_every_device();  // device 0 stays current
    const double clock_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    if (status == cudaSuccess) status = synced;
    if (status != cudaSuccess)
      return failure(wire::Status::cuda_error,
                     std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")", status);
    if (events) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      reply.event_ms = ms;
    } else if (request.timed) {
      reply.event_ms = clock_ms;
    }
    return reply;
  }

  // The checks time the reference in their own process after GPU work of another process's
  // (an empty kernel in the empty call's host) and then their own L2 flush. A call here follows
  // the checks' work (the input revealed, their flush), so it flushes again in this context
  // first: a flush made only in another context leaves a call faster, by up to several
  // microseconds, than the same code timed by the checks (docs/grader-measurements.md, "A flush
  // in another process"). The empty call does the same, so its round trip still matches the
  // call's. A call our clock times first wakes every device, so that the switch to this
  // context falls outside the clock.
  void prepare_cache_as_the_reference_finds_it(bool host_clock) {
    if (host_clock) wake_every_device();
    CUDA_CHECK(cudaSetDevice(0));
    flush_l2(stream_);
    CUDA_CHECK(synchronize_every_device());
  }

  void* module_;
  cudaStream_t stream_{};
  cudaEvent_t start_{}, stop_{};
  HostMappings mappings_;
  std::map<std::string, void*> symbols_;
};

struct Arguments {
  std::string module;   // empty: a host with no submission (measures the round trip)
  std::string scratch;
};

Arguments parse(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--module") args.module = argv[i + 1];
    if (flag == "--scratch") args.scratch = argv[i + 1];
  }
  return args;
}

}  // namespace

// The empty call's host runs no submission: as root it keeps the grader's user, so that the
// submission's user (nobody) can neither signal nor trace it. Signals out of a submission's
// host are scoped where the kernel can. Both are the process-isolation defence.
static SandboxPolicy host_policy(const Arguments& args) {
  const bool isolate = defence_enabled(Defence::process_isolation);
  SandboxPolicy policy{{args.module}, args.scratch};
  policy.keep_user = isolate && args.module.empty();
  policy.scope_signals = isolate;
  return policy;
}

// The first process of a PID namespace ignores every signal it has no handler for, SIGABRT
// included: abort() (a failed assert() too) would go on to end the host another way (glibc's
// abort then faults or exits with 127), and the student would read of a crash they did not
// cause. With a handler it ends with the status a shell gives SIGABRT, which the runner
// reports as that signal (remote.cpp's describe_status).
static void exit_as_aborted(int) { _exit(128 + SIGABRT); }

static void report_abort_as_pid_one() {
  if (getpid() == 1) signal(SIGABRT, exit_as_aborted);
}

int main(int argc, char** argv) {
  const Arguments args = parse(argc, argv);
  const SandboxPolicy policy = host_policy(args);
  wire::Reply hello;
  std::unique_ptr<Host> host;
  try {
    if (!policy.keep_user) leave_root();  // before CUDA starts: see sandbox.h
    // Spin while waiting for the device: the reply then leaves as soon as the work is done, as
    // it does in the round-trip probe, whatever the kernel's length.
    CUDA_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
    CUDA_CHECK(cudaFree(nullptr));  // the driver and its libraries load before the sandbox closes
    const std::string sandbox = enter_sandbox(policy);
    report_abort_as_pid_one();
    wire::set_text(hello.message, sizeof hello.message, sandbox.c_str());
    host = std::make_unique<Host>(load_module(args.module));
  } catch (const std::exception& error) {
    hello = failure(wire::Status::failed, error.what());
  }
  send_reply(socket_fd, hello);
  if (!host) return 1;

  serve_requests(socket_fd, [&](const wire::Request& request, int fd) { return host->handle(request, fd); });
  return 0;
}
