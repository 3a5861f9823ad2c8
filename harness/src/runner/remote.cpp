#include "labkit/remote.h"

#include "labkit/defences.h"
#include "labkit/device.h"

#include "child_process.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace labkit {

namespace {

constexpr int host_socket_fd = 3;  // where the host expects its end
// What the submission may print (stdout and stderr together) in one host's life: past it,
// writes fail and the output is dropped, with a note, but the submission runs on. A kill
// (SIGXFSZ) would turn a printf left in a loop into a wrong answer on every case.
constexpr rlim_t host_output_bytes = rlim_t(1) << 20;
// Under a tool the limit also caps the tool's own log files (sanitizer reports, ncu's CSV).
constexpr rlim_t tool_file_bytes = rlim_t(64) << 20;

using child::now_ms;
using child::pointers;

// Under a tool, the sandbox must let the host read the tool's own folder (the libraries it
// injects) and use what the tool talks through; the host's sandbox (sandbox.cpp) reads these
// two variables. Only the trusted runner sets them: the submission's code runs later.
void add_tool_environment(const std::vector<std::string>& wrapper, std::vector<std::string>& variables) {
  if (wrapper.empty()) return;
  std::error_code error;
  const std::filesystem::path tool = std::filesystem::canonical(wrapper.front(), error);
  const std::filesystem::path resolved = error ? std::filesystem::path(wrapper.front()) : tool;
  variables.push_back("LABKIT_TOOL=" + std::filesystem::path(wrapper.front()).filename().string());
  variables.push_back("LABKIT_TOOL_DIR=" + resolved.parent_path().string());
}

std::string with_start_number(std::string argument, int start) {
  const std::string marker = "{start}";
  for (std::size_t at; (at = argument.find(marker)) != std::string::npos;)
    argument.replace(at, marker.size(), std::to_string(start));
  return argument;
}

// A submission's host starts as the first process of a PID namespace of its own, with a mount
// namespace whose /proc shows that PID namespace, where the kernel lets the runner make them
// (CAP_SYS_ADMIN: as root). There it can see, signal or trace no process but its own, the
// grader's empty-call host and the runner included, and every process it starts ends when it
// does. (The CUDA driver fails to start under a /proc of another PID namespace.)
constexpr unsigned long isolated_clone_flags = CLONE_NEWPID | CLONE_NEWNS | SIGCHLD;

// In the new child: its own /proc, seen by it alone. False when the kernel refuses.
bool mount_own_proc() {
  return mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
         mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
}

// Whether this machine lets the runner make both namespaces and mount /proc in them: tried once
// with a child that does nothing else, so a container that allows the one but not the other
// falls back to fork() instead of failing every host's start.
bool isolation_works() {
  static const bool works = [] {
    const long pid = syscall(SYS_clone, isolated_clone_flags, nullptr, nullptr, nullptr, nullptr);
    if (pid < 0) return false;
    if (pid == 0) _exit(mount_own_proc() ? 0 : 1);
    int status = 0;
    return waitpid(pid_t(pid), &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }();
  return works;
}

// Like fork(), into the namespaces where isolation_works(); the child only mounts, sets up
// descriptors and limits, and calls execve.
pid_t fork_isolated() {
  if (!isolation_works()) return fork();
  const long pid = syscall(SYS_clone, isolated_clone_flags, nullptr, nullptr, nullptr, nullptr);
  if (pid < 0) return fork();
  if (pid == 0 && !mount_own_proc()) _exit(126);
  return pid_t(pid);
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return std::string("was killed by SIG") + sigabbrev_np(signal) + " (" + strsignal(signal) + ")";
  }
  // A host that is its PID namespace's first process ends abort() with this status (host_main.cu).
  if (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGABRT) return "was killed by SIGABRT (Aborted)";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped";
}

}  // namespace

HostProcess::HostProcess(HostOptions options) : options_(std::move(options)) {}

HostProcess::~HostProcess() { stop(); }

void HostProcess::start() {
  const double started_ms = now_ms();
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) throw std::runtime_error("socketpair failed");
  scratch_ = child::make_scratch("host");  // the host drops to nobody when started as root
  ++starts_;
  std::vector<std::string> argv_strings = command_line();
  std::vector<std::string> env_strings = child::base_environment(scratch_, environ);
  add_tool_environment(options_.wrapper, env_strings);
  std::vector<char*> argv = pointers(argv_strings), envp = pointers(env_strings);

  output_ = open_output();
  pid_ = fork_host();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // Only the socket and the output cross: every other descriptor (the result channel above
    // all) closes.
    if (dup2(ends[1], host_socket_fd) < 0 || dup2(output_, STDOUT_FILENO) < 0 || dup2(output_, STDERR_FILENO) < 0)
      _exit(127);
    fcntl(host_socket_fd, F_SETFD, 0);
    close_range(host_socket_fd + 1, ~0u, 0);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_IGN);  // a write past the cap fails (EFBIG) instead of killing
    if (cpu_ >= 0) child::pin_to_cpu(0, cpu_);
    const rlimit file_size{output_cap(), output_cap()};
    setrlimit(RLIMIT_FSIZE, &file_size);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(ends[1]);
  socket_ = ends[0];
  mapped_.clear();
  managed_.clear();
  const wire::Reply hello = receive(options_.start_seconds, "while loading your code");
  if (hello.status != wire::Status::ok) {
    const std::string message = hello.message;
    stop();
    throw SubmissionFailure(message);
  }
  sandbox_ = hello.message;
  std::printf("host %d started in %.2f s (%s)\n", int(pid_), (now_ms() - started_ms) / 1e3, sandbox_.c_str());
}

// The host's command line, behind the tool's when it runs under one.
std::vector<std::string> HostProcess::command_line() const {
  std::vector<std::string> argv;
  for (const std::string& argument : options_.wrapper) argv.push_back(with_start_number(argument, starts_));
  argv.insert(argv.end(), {options_.executable, "--scratch", scratch_});
  if (!options_.module.empty()) argv.insert(argv.end(), {"--module", options_.module});
  return argv;
}

// A tool writes its findings when its target ends: the host ends by itself once its socket
// closes, and the tool gets a while to finish before it is killed.
void HostProcess::wait_for_wrapper() {
  if (socket_ >= 0) close(socket_);
  socket_ = -1;
  const double deadline = now_ms() + options_.wrapper_exit_seconds * 1000;
  while (now_ms() < deadline) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    usleep(20 * 1000);
  }
}

pid_t HostProcess::fork_host() const {
  const bool isolate =
      !options_.module.empty() && options_.wrapper.empty() && defence_enabled(Defence::process_isolation);
  return isolate ? fork_isolated() : fork();
}

void HostProcess::pin_to_cpu(int cpu) {
  cpu_ = cpu;
  if (pid_ > 0 && cpu >= 0) child::pin_to_cpu(pid_, cpu);
}

void HostProcess::stop() {
  if (pid_ > 0 && !options_.wrapper.empty() && !hung_) wait_for_wrapper();
  hung_ = false;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  copy_output_to_log();
  if (socket_ >= 0) close(socket_);
  pid_ = socket_ = -1;
  if (!scratch_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch_, ignored);
    scratch_.clear();
  }
}

rlim_t HostProcess::output_cap() const { return options_.wrapper.empty() ? host_output_bytes : tool_file_bytes; }

// The submission prints into memory the runner alone can name (not a file in the scratch
// folder, which the sandboxed host could swap for a link); appending, so that every write
// past the cap fails however the host moves its offset.
int HostProcess::open_output() {
  const int fd = memfd_create("submission-output", MFD_CLOEXEC);
  if (fd < 0) throw std::runtime_error("memfd_create failed");
  fcntl(fd, F_SETFL, O_APPEND);
  return fd;
}

// What the submission printed goes to the runner's log (the grader's run log), once its host
// has stopped; and a note when the cap dropped some of it.
void HostProcess::copy_output_to_log() {
  if (output_ < 0) return;
  struct stat size {};
  fstat(output_, &size);
  std::fflush(stdout);
  char buffer[1 << 16];
  for (off_t offset = 0; offset < size.st_size;) {
    const ssize_t got = pread(output_, buffer, sizeof buffer, offset);
    if (got <= 0) break;
    [[maybe_unused]] const auto written = write(STDOUT_FILENO, buffer, std::size_t(got));
    offset += got;
  }
  if (rlim_t(size.st_size) >= output_cap())
    std::printf("\nnote: your code printed more than %d MiB (stdout and stderr together); the rest was dropped, "
                "and grading went on. A printf left in a loop?\n",
                int(output_cap() >> 20));
  close(output_);
  output_ = -1;
}

void HostProcess::send(const wire::Request& request, int fd) {
  if (!wire::send_request(socket_, request, fd)) died("before it took the call");
}

bool HostProcess::reply_within(double seconds) {
  pollfd ready{socket_, POLLIN, 0};
  return poll(&ready, 1, int(seconds * 1000)) != 0;
}

// A reply must arrive whole within `seconds`; anything else is a crash or a hang.
wire::Reply HostProcess::receive(double seconds, const char* doing) {
  if (!reply_within(seconds)) {
    hung_ = true;
    stop();
    ++hangs_;
    throw SubmissionFailure("your code did not return within " + std::to_string(int(seconds)) + " s " + doing +
                            " and was stopped (a kernel or loop that never ends?)",
                            protocol::Outcome::hung);
  }
  wire::Reply reply;
  const ssize_t received = recv(socket_, &reply, sizeof reply, 0);
  if (received <= 0) died(doing);
  if (received != ssize_t(sizeof reply)) {
    stop();
    throw SubmissionFailure(std::string("the process running your code wrote something other than a reply on the "
                                        "grader's connection ") + doing);
  }
  reply.message[sizeof reply.message - 1] = '\0';
  return reply;
}

[[noreturn]] void HostProcess::died(const char* doing) {
  int status = 0;
  // The socket closed: the process is gone or going; give it a moment to be reaped.
  for (int i = 0; i < 100 && waitpid(pid_, &status, WNOHANG) == 0; ++i) usleep(10 * 1000);
  const bool reaped = WIFEXITED(status) || WIFSIGNALED(status);
  const std::string what = reaped ? describe_status(status) : "closed its connection";
  pid_ = reaped ? -1 : pid_;
  stop();
  throw SubmissionFailure("the process running your code " + what + " " + doing);
}

void HostProcess::map_buffers(const wire::Request& request) {
  for (const std::uint64_t id : child::buffers_to_map(request, mapped_)) {
    const child::MapRequest map = child::map_request(id);
    send(map.request, map.fd);
    close(map.fd);
    const wire::Reply reply = receive(options_.call_seconds, "while mapping a buffer");
    if (reply.status != wire::Status::ok) throw SubmissionFailure(std::string("mapping a buffer failed: ") + reply.message);
    mapped_.insert(id);
    if (map.request.memory == std::uint32_t(MemoryKind::managed)) managed_.insert(id);
  }
}

void HostProcess::unmap_freed() {
  for (const std::uint64_t id : child::freed_buffers(mapped_)) {
    send(child::unmap_request(id));
    receive(options_.call_seconds, "while releasing a buffer");
    mapped_.erase(id);
    managed_.erase(id);
  }
}

void HostProcess::stage_managed() {
  if (pid_ <= 0) return;
  unmap_freed();
  for (const std::uint64_t id : managed_) {
    send(child::stage_request(id));
    const wire::Reply reply = receive(options_.call_seconds, "while preparing managed memory for the call");
    if (reply.status == wire::Status::cuda_error) {
      stop();
      throw CudaError(cudaError_t(reply.cuda_error), std::string("preparing managed memory failed: ") + reply.message);
    }
    if (reply.status != wire::Status::ok)
      throw SubmissionFailure(std::string("preparing managed memory failed: ") + reply.message);
  }
}

namespace {

// More GPU device files than a process of one CUDA context per device holds: measured on an
// H100, a primary context holds 20 of /dev/nvidia0 however much it allocates, launches,
// captures or shares, and every further context 16 more. The checks' own process is the
// yardstick: it has a primary context on the same devices.
bool holds_another_context(pid_t pid) {
  constexpr int files_of_a_context = 16;
  static const int ours = child::gpu_device_files("/proc/self/fd");
  return child::gpu_device_files("/proc/" + std::to_string(pid) + "/fd") > ours + files_of_a_context / 2;
}

}  // namespace

// A second line behind the sandbox: a forbidden library mapped into the process, however it
// got there, ends the call; so does a CUDA context of its own, whose work the host's
// whole-device synchronisation does not wait for.
void HostProcess::check_process() {
  if (pid_ <= 0) return;
  // Under a tool (compute-sanitizer, ncu), whose own code may hold more, and which times nothing.
  if (options_.wrapper.empty() && defence_enabled(Defence::context_count) && holds_another_context(pid_)) {
    stop();
    throw SubmissionFailure("your code opened a CUDA context of its own (cuCtxCreate or the like): work there is "
                            "not ordered with the stream it was handed, so the call is not accepted; use the "
                            "stream and the device the checks give you");
  }
  if (options_.forbidden_libraries.empty()) return;
  std::ifstream maps("/proc/" + std::to_string(pid_) + "/maps");
  for (std::string line; std::getline(maps, line);)
    for (const std::string& stem : options_.forbidden_libraries)
      if (line.find("/" + stem + ".so") != std::string::npos) {
        forbidden_seen_ = stem;
        stop();
        throw SubmissionFailure("your code loaded " + stem + " at run time, a library this lab forbids");
      }
}

void HostProcess::ensure_running() {
  if (pid_ <= 0) start();
}

wire::Reply HostProcess::request(const wire::Request& request, double give_up_ms) {
  if (hangs_ >= options_.max_hangs)
    throw SubmissionFailure("not run: " + std::to_string(hangs_) + " earlier calls never returned",
                            protocol::Outcome::not_run);
  if (pid_ <= 0) start();
  unmap_freed();
  map_buffers(request);
  const double started = now_ms();
  send(request);
  if (give_up_ms > 0 && give_up_ms < 1e3 * options_.call_seconds && !reply_within(give_up_ms / 1e3)) {
    hung_ = true;  // killed at once: no tool's results to wait for
    stop();
    throw TimedCallStopped(give_up_ms);
  }
  const wire::Reply reply = receive(options_.call_seconds, "during this call");
  last_wall_ms_ = now_ms() - started;
  if (!request.timed) check_process();  // a timed call's waits until its window has closed
  if (reply.status == wire::Status::cuda_error) {
    stop();  // the context may be lost: the next call gets a fresh process
    throw CudaError(cudaError_t(reply.cuda_error), std::string("your code raised a CUDA error: ") + reply.message);
  }
  if (reply.status != wire::Status::ok) throw SubmissionFailure(reply.message);
  return reply;
}

RemoteTiming*& current_remote_timing() {
  thread_local RemoteTiming* timing = nullptr;
  return timing;
}

wire::Reply call_in_host(HostProcess& host, wire::Request& request) {
  // The host works in its own CUDA context, unordered with ours: the uploads and poisoning
  // (cudaMemsetAsync on the legacy stream) still queued here must end before it starts.
  synchronize_all_devices();
  RemoteTiming* timing = current_remote_timing();
  request.timed = timing != nullptr;
  request.host_clock = timing != nullptr && timing->host_clock;
  if (timing != nullptr) timing->host = &host;  // before the call: a stopped one names it too
  const wire::Reply reply = host.request(request, timing != nullptr ? timing->give_up_ms : 0);
  if (timing != nullptr) {
    ++timing->calls;
    timing->event_ms = reply.event_ms;
    timing->wall_ms = host.last_wall_ms();
  }
  return reply;
}

}  // namespace labkit
