#include "labkit/rank_host.h"

#include "labkit/cuda_check.h"
#include "labkit/sandbox.h"
#include "labkit/shared_memory.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace labkit {

namespace {

int connect_to(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return -1;
  return fd;
}

// A rank whose parent (mpirun) dies dies too, even if the runner that killed mpirun could not
// reach it. Set after the sandbox: changing the user clears it.
void die_with(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) std::_Exit(1);
}

// Spin while waiting for the device, as the host does: the answer leaves as soon as the work
// is done. Then the context exists, and the driver's libraries are loaded, before the sandbox.
void start_device(int device) {
  if (device < 0) return;
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
  CUDA_CHECK(cudaFree(nullptr));
}

class RankHost {
public:
  RankHost(const RankHostOptions& options, void* module, const char* function, RankInvoke invoke)
      : options_(options), module_(module), function_(function), invoke_(std::move(invoke)) {
    if (options_.device >= 0) CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }

  wire::Reply handle(const wire::Request& request, int fd) {
    switch (request.op) {
      case wire::Op::map:
        mappings_.map(request, fd);
        return {};
      case wire::Op::unmap:
        mappings_.remove(request.id);
        return {};
      case wire::Op::call:
        return call(request);
      default:
        return failure(wire::Status::failed, "a rank takes only map, unmap and call requests");
    }
  }

private:
  // The call, then every kernel of this rank's GPU finished: work left on streams of the
  // submission's own is counted by the runner's clock too.
  wire::Reply call(const wire::Request& request) {
    if (std::strncmp(request.function, function_.c_str(), wire::name_bytes) != 0)
      return failure(wire::Status::failed, "the contract has no function " + std::string(request.function));
    if (symbol_ == nullptr) symbol_ = dlsym(module_, function_.c_str());
    if (symbol_ == nullptr)
      return failure(wire::Status::failed, function_ + " is not defined in your code: define it exactly as the lab's "
                                           "header declares it, and include that header so it keeps its extern \"C\" name");
    if (options_.device >= 0) CUDA_CHECK(cudaSetDevice(options_.device));
    invoke_(symbol_, request, mappings_, stream_);
    if (options_.device < 0) return {};
    cudaError_t status = cudaGetLastError();
    const cudaError_t reset = cudaSetDevice(options_.device);
    if (status == cudaSuccess) status = reset;
    const cudaError_t synced = cudaDeviceSynchronize();
    if (status == cudaSuccess) status = synced;
    if (status != cudaSuccess)
      return failure(wire::Status::cuda_error,
                     std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")", status);
    return {};
  }

  RankHostOptions options_;
  void* module_;
  std::string function_;
  RankInvoke invoke_;
  void* symbol_ = nullptr;
  cudaStream_t stream_ = nullptr;
  HostMappings mappings_;
};

// The value after `flag` in argv, or "".
std::string argument(int argc, char** argv, const char* flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  return {};
}

}  // namespace

RankHostOptions parse_rank_arguments(int argc, char** argv) {
  RankHostOptions options;
  options.socket = argument(argc, argv, "--socket");
  options.module = argument(argc, argv, "--module");
  options.scratch = argument(argc, argv, "--scratch");
  return options;
}

int serve_rank(const RankHostOptions& options, const char* function, const RankInvoke& invoke) {
  const pid_t parent = getppid();
  const int socket_fd = connect_to(options.socket);
  if (socket_fd < 0) {
    std::fprintf(stderr, "rank %d: cannot reach the runner at %s: %s\n", options.rank, options.socket.c_str(),
                 std::strerror(errno));
    return 3;
  }
  wire::Reply hello;
  std::unique_ptr<RankHost> host;
  try {
    start_device(options.device);
    const std::string sandbox = enter_sandbox({{options.module}, options.scratch});
    die_with(parent);
    wire::set_text(hello.message, sizeof hello.message, sandbox.c_str());
    host = std::make_unique<RankHost>(options, load_module(options.module), function, invoke);
  } catch (const std::exception& error) {
    hello = failure(wire::Status::failed, error.what());
  }
  hello.return_bits = std::uint64_t(options.rank);
  send_reply(socket_fd, hello);
  if (!host) return 1;

  serve_requests(socket_fd, [&](const wire::Request& request, int fd) { return host->handle(request, fd); });
  return 0;
}

bool launching(int argc, char** argv) { return argc > 1 && std::strcmp(argv[1], "--launch") == 0; }

int launch_in_sandbox(int argc, char** argv) {
  int command = 0;
  for (int i = 1; i < argc && command == 0; ++i)
    if (std::strcmp(argv[i], "--") == 0) command = i + 1;
  if (command == 0 || command >= argc) {
    std::fprintf(stderr, "usage: %s --launch --module M --scratch S -- mpirun ARGS...\n", argv[0]);
    return 2;
  }
  try {
    namespace fs = std::filesystem;
    // /proc whole, with the rights of files: each rank starts CUDA before it enters its own
    // sandbox, and the driver writes to (and reopens) entries of /proc/self, whose process
    // numbers are not known yet; with read rights alone cudaSetDevice fails ("OS call
    // failed", 2 x H200). Student code runs only after the rank's own sandbox, which allows
    // /proc/self alone. This one still keeps other users' processes out of reach (Landlock
    // denies tracing them, and so their memory and environment).
    const SandboxPolicy policy{{"/proc", fs::canonical(argv[command]).string(), fs::canonical("/proc/self/exe").string(),
                                argument(command - 1, argv, "--module")},
                               argument(command - 1, argv, "--scratch"),
                               {"/proc"}};
    const pid_t parent = getppid();
    enter_sandbox(policy);
    die_with(parent);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "cannot start mpirun in the sandbox: %s\n", error.what());
    return 126;
  }
  execv(argv[command], argv + command);
  std::fprintf(stderr, "cannot execute %s: %s\n", argv[command], std::strerror(errno));
  return 127;
}

}  // namespace labkit
