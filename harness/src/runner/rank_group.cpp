#include "labkit/rank_group.h"

#include "labkit/cuda_check.h"
#include "labkit/remote.h"
#include "labkit/shared_memory.h"

#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace labkit {

namespace {

namespace fs = std::filesystem;

using child::nobody;
using child::now_ms;
using child::pointers;
using child::starts_with;

constexpr rlim_t log_size_bytes = rlim_t(64) << 20;  // mpirun prints what the ranks print
constexpr std::size_t log_tail_bytes = 2000;

int listen_at(const std::string& path, int backlog) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (fd < 0 || path.size() >= sizeof address.sun_path) throw std::runtime_error("cannot make the ranks' socket");
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, backlog) != 0)
    throw std::runtime_error("cannot listen at " + path + ": " + std::strerror(errno));
  if (geteuid() == 0 && chown(path.c_str(), nobody, nobody) != 0)
    throw std::runtime_error("cannot hand the ranks' socket to nobody");
  return fd;
}

// Reaps the ranks that came to us when mpirun ended (see PR_SET_CHILD_SUBREAPER in start).
template <class Ranks>
void reap(const Ranks& ranks) {
  for (const auto& rank : ranks)
    for (int i = 0; rank.pid > 0 && i < 50; ++i) {
      const pid_t reaped = waitpid(rank.pid, nullptr, WNOHANG);
      if (reaped == rank.pid || (reaped < 0 && errno != EINTR && i > 10)) break;
      usleep(10 * 1000);
    }
}

}  // namespace

std::optional<std::string> find_mpirun() {
  const char* path = std::getenv("PATH");
  std::stringstream folders(path != nullptr ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');) {
    if (folder.empty()) continue;
    const fs::path candidate = fs::absolute(fs::path(folder) / "mpirun");
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

std::string why_ranks_cannot_run(const std::string& program, const std::string& module,
                                 const std::optional<std::string>& mpirun) {
  if (program.empty() || !fs::exists(program))
    return "not run: needs MPI (no rank program " + fs::path(program).filename().string() +
           " beside the runner: either this build found no MPI when it was configured (install Open MPI "
           "with its development files, e.g. libopenmpi-dev, then configure the build again) or the rank "
           "program was not built (./grade builds it)";
  // The grader leaves "<module>.failed" where the module did not compile or was not handed in
  // ("mpi_allreduce.cu was not handed in"): the student's doing, not the machine's.
  if (std::ifstream failed(module + ".failed"); !module.empty() && failed) {
    std::string why;
    std::getline(failed, why);
    return "not run: " + why;
  }
  if (module.empty() || !fs::exists(module))
    return "not run: needs MPI (part 2 was not compiled: the grader compiles it only where the kit was built "
           "with MPI)";
  if (!mpirun) return "not run: needs MPI (mpirun is not on PATH)";
  return {};
}

std::vector<std::string> rank_environment(const std::string& scratch, char** ours) {
  std::vector<std::string> variables = child::base_environment(scratch, ours);
  bool multicast_set = false;
  for (char** entry = ours; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    // The instructor's own settings for NCCL and Open MPI (NCCL_DEBUG=INFO, say).
    if (starts_with(text, "NCCL_") || starts_with(text, "OMPI_MCA_")) variables.push_back(text);
    multicast_set = multicast_set || starts_with(text, "NCCL_NVLS_ENABLE=");
  }
  // NVLink multicast is off on the kit's machines (README, NCCL); the reference needs it off.
  if (!multicast_set) variables.push_back("NCCL_NVLS_ENABLE=0");
  return variables;
}

// Open MPI's transports, chosen for the sandbox:
//   pml ob1 with btl self,vader: ranks talk through shared memory. Not UCX (the pml Ubuntu's
//     Open MPI prefers): it looks for network devices and reads peers' memory directly.
//   btl_vader_backing_directory: vader's shared segment is a file, by default in /dev/shm,
//     which the sandbox keeps shut (two groups could meet there); in the group's scratch
//     folder instead, made before the ranks enter their own sandbox.
//   btl_vader_single_copy_mechanism none: vader's single copy (CMA) reads the peer's memory
//     with process_vm_readv, which Landlock refuses between two sandboxes; none copies
//     through the shared segment.
//   --bind-to none, --oversubscribe: one rank per GPU, whatever the cores; no pinning.
//   -x NCCL_NVLS_ENABLE: the ranks get mpirun's environment anyway; this one must not be lost.
// Open MPI's session folder goes where TMPDIR says: the scratch folder too. No
// --allow-run-as-root: the launcher has dropped root before it becomes mpirun.
std::vector<std::string> launch_command(const RankGroupOptions& options, const std::string& scratch,
                                        const std::string& socket_path) {
  return {options.program, "--launch", "--module", options.module, "--scratch", scratch, "--",
          options.mpirun, "-np", std::to_string(options.ranks), "--bind-to", "none", "--oversubscribe",
          "--mca", "pml", "ob1", "--mca", "btl", "self,vader", "--mca", "osc", "^ucx",
          "--mca", "btl_vader_single_copy_mechanism", "none", "--mca", "btl_vader_backing_directory", scratch,
          "-x", "NCCL_NVLS_ENABLE", options.program, "--socket", socket_path, "--module", options.module, "--scratch", scratch};
}

RankGroup::RankGroup(RankGroupOptions options) : options_(std::move(options)) {}

RankGroup::~RankGroup() { stop(); }

std::string RankGroup::mpirun_log_tail() const {
  std::ifstream in(scratch_ + "/mpirun.log", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > log_tail_bytes) text = "[...]" + text.substr(text.size() - log_tail_bytes);
  return text.empty() ? "" : "; mpirun said:\n" + text;
}

[[noreturn]] void RankGroup::fail(const std::string& message, protocol::Outcome outcome) {
  usleep(200 * 1000);  // mpirun reports a rank's death a moment later
  const std::string full = message + mpirun_log_tail();
  stop();
  throw SubmissionFailure(full, outcome);
}

void RankGroup::start() {
  const double started_ms = now_ms();
  scratch_ = child::make_scratch("ranks");  // mpirun and the ranks run as nobody and write here
  const std::string socket_path = scratch_ + "/ranks.sock";
  const int listener = listen_at(socket_path, options_.ranks);
  const int log_fd = open((scratch_ + "/mpirun.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<std::string> argv_strings = launch_command(options_, scratch_, socket_path);
  std::vector<std::string> env_strings = rank_environment(scratch_, environ);
  std::vector<char*> argv = pointers(argv_strings), envp = pointers(env_strings);

  // Ranks that outlive mpirun become our children rather than init's, so that stop() reaps
  // them: an init that reaps nothing (a container's) would keep their zombies.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // mpirun stays in our process group: when the grader kills the run, it kills mpirun, and
  // each rank dies with its parent.
  mpirun_pid_ = fork();
  if (mpirun_pid_ < 0) throw std::runtime_error("fork failed");
  if (mpirun_pid_ == 0) {
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    close_range(3, ~0u, 0);  // the result channel above all
    signal(SIGPIPE, SIG_DFL);
    const rlimit file_size{log_size_bytes, log_size_bytes};
    setrlimit(RLIMIT_FSIZE, &file_size);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(log_fd);
  first_call_ = true;
  try {
    accept_ranks(listener);
  } catch (...) {
    close(listener);
    throw;
  }
  close(listener);
  std::printf("%d ranks started in %.2f s (%s)\n", options_.ranks, (now_ms() - started_ms) / 1e3, sandbox_.c_str());
}

// Every rank connects, then greets once its module is loaded; rank r's greeting carries r.
// Connections are kept as they come, so that stop() reaches every rank whatever fails.
void RankGroup::accept_ranks(int listener) {
  const double deadline = now_ms() + options_.start_seconds * 1000;
  ranks_.clear();
  while (int(ranks_.size()) < options_.ranks) {
    if (now_ms() > deadline)
      fail("only " + std::to_string(ranks_.size()) + " of " + std::to_string(options_.ranks) +
           " MPI ranks reached the grader within " + std::to_string(int(options_.start_seconds)) + " s");
    if (waitpid(mpirun_pid_, nullptr, WNOHANG) == mpirun_pid_) {
      mpirun_pid_ = -1;
      fail("mpirun ended before every rank had started");
    }
    pollfd ready{listener, POLLIN, 0};
    if (poll(&ready, 1, 100) <= 0) continue;
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ucred peer{};
    socklen_t size = sizeof peer;
    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size);
    ranks_.push_back({fd, peer.pid, {}});
  }
  std::vector<Rank> by_rank(ranks_.size());
  for (const Rank& rank : ranks_) {
    pollfd ready{rank.socket, POLLIN, 0};
    wire::Reply hello;
    const int left = std::max(0, int(deadline - now_ms()));
    if (poll(&ready, 1, left) <= 0 || recv(rank.socket, &hello, sizeof hello, 0) != ssize_t(sizeof hello))
      fail("an MPI rank never finished starting (loading your code)");
    hello.message[sizeof hello.message - 1] = '\0';
    const std::uint64_t index = hello.return_bits;
    if (index >= by_rank.size() || by_rank[index].socket >= 0) fail("an MPI rank gave a wrong rank number");
    if (hello.status != wire::Status::ok) fail("rank " + std::to_string(index) + ": " + hello.message);
    by_rank[index] = rank;
    if (index == 0) sandbox_ = hello.message;
  }
  ranks_ = by_rank;
}

void RankGroup::send(Rank& rank, int index, const wire::Request& request, int fd) {
  if (!wire::send_request(rank.socket, request, fd))
    fail("rank " + std::to_string(index) + ": the process running your code ended before it took the request");
}

wire::Reply RankGroup::receive(int index, double seconds, const char* doing) {
  pollfd ready{ranks_[std::size_t(index)].socket, POLLIN, 0};
  if (poll(&ready, 1, int(seconds * 1000)) <= 0) {
    ++hangs_;
    fail("rank " + std::to_string(index) + " did not answer within " + std::to_string(int(seconds)) + " s " + doing);
  }
  wire::Reply reply;
  if (recv(ready.fd, &reply, sizeof reply, 0) != ssize_t(sizeof reply))
    fail("rank " + std::to_string(index) + ": the process running your code died " + doing);
  reply.message[sizeof reply.message - 1] = '\0';
  return reply;
}

void RankGroup::map_buffers(Rank& rank, int index, const wire::Request& request) {
  for (const std::uint64_t id : child::buffers_to_map(request, rank.mapped)) {
    const child::MapRequest map = child::map_request(id);
    send(rank, index, map.request, map.fd);
    close(map.fd);
    const wire::Reply reply = receive(index, options_.call_seconds, "while mapping a buffer");
    if (reply.status != wire::Status::ok)
      fail("rank " + std::to_string(index) + ": mapping a buffer failed: " + reply.message);
    rank.mapped.insert(id);
  }
}

// Buffers the checks freed since the last call leave the ranks too.
void RankGroup::unmap_freed(Rank& rank, int index) {
  for (const std::uint64_t id : child::freed_buffers(rank.mapped)) {
    send(rank, index, child::unmap_request(id));
    receive(index, options_.call_seconds, "while releasing a buffer");
    rank.mapped.erase(id);
  }
}

// One reply from every rank, all within `seconds` of now. A rank that is still working when
// time runs out is a hang; one that never calls the collective its peers wait in makes them
// hang too, so the message names every rank that did not answer. Once a rank has failed, its
// peers get a second more: they may be waiting for it.
std::vector<wire::Reply> RankGroup::receive_all(double seconds) {
  double deadline = now_ms() + seconds * 1000;
  std::vector<wire::Reply> replies(ranks_.size());
  std::vector<bool> answered(ranks_.size(), false);
  for (std::size_t left = ranks_.size(); left > 0;) {
    std::vector<pollfd> waiting;
    std::vector<std::size_t> which;
    for (std::size_t r = 0; r < ranks_.size(); ++r)
      if (!answered[r]) waiting.push_back({ranks_[r].socket, POLLIN, 0}), which.push_back(r);
    const int remaining = int(deadline - now_ms());
    if (remaining <= 0 || poll(waiting.data(), waiting.size(), remaining) <= 0) {
      for (std::size_t r = 0; r < ranks_.size(); ++r)
        if (answered[r] && replies[r].status != wire::Status::ok)
          fail("rank " + std::to_string(r) + ": " + replies[r].message + " (and the other ranks then waited)");
      std::string names;
      for (std::size_t r : which) names += (names.empty() ? "" : ", ") + std::to_string(r);
      ++hangs_;
      fail("your code did not return within " + std::to_string(int(seconds)) + " s on rank(s) " + names +
           " and was stopped (a kernel or loop that never ends, or ranks waiting in a collective that not every "
           "rank calls?)",
           protocol::Outcome::hung);
    }
    for (std::size_t k = 0; k < waiting.size(); ++k) {
      if (waiting[k].revents == 0) continue;
      const std::size_t r = which[k];
      if (recv(ranks_[r].socket, &replies[r], sizeof replies[r], 0) != ssize_t(sizeof replies[r]))
        fail("rank " + std::to_string(r) + ": the process running your code died during this call");
      replies[r].message[sizeof replies[r].message - 1] = '\0';
      answered[r] = true;
      --left;
      if (replies[r].status != wire::Status::ok) deadline = std::min(deadline, now_ms() + 1000);
    }
  }
  return replies;
}

double RankGroup::call(std::vector<wire::Request> requests) {
  if (hangs_ >= options_.max_hangs)
    throw SubmissionFailure("not run: " + std::to_string(hangs_) + " earlier calls never returned",
                            protocol::Outcome::not_run);
  if (requests.size() != std::size_t(options_.ranks)) throw std::logic_error("RankGroup::call: one request per rank");
  if (!running()) start();
  for (int r = 0; r < options_.ranks; ++r) {
    unmap_freed(ranks_[std::size_t(r)], r);
    map_buffers(ranks_[std::size_t(r)], r, requests[std::size_t(r)]);
  }
  // The first call sets up whatever the submission keeps (an NCCL communicator): start-up time.
  const double seconds = first_call_ ? options_.start_seconds : options_.call_seconds;
  const double started = now_ms();
  for (int r = 0; r < options_.ranks; ++r) send(ranks_[std::size_t(r)], r, requests[std::size_t(r)]);
  const std::vector<wire::Reply> replies = receive_all(seconds);
  const double elapsed = now_ms() - started;
  first_call_ = false;
  for (std::size_t r = 0; r < replies.size(); ++r) {
    const std::string rank = "rank " + std::to_string(r) + ": ";
    if (replies[r].status == wire::Status::cuda_error) {
      stop();  // the context may be lost: the next call gets fresh ranks
      throw CudaError(cudaError_t(replies[r].cuda_error), rank + "your code raised a CUDA error: " + replies[r].message);
    }
    if (replies[r].status != wire::Status::ok) throw SubmissionFailure(rank + replies[r].message);
  }
  return elapsed;
}

// mpirun first, asked to end the job: it ends and reaps its ranks. Then whatever is left is
// killed, ranks by the numbers their connections gave (a rank can be deaf to mpirun), and
// whatever they wrote goes with the scratch folder.
void RankGroup::stop() {
  for (Rank& rank : ranks_)
    if (rank.socket >= 0) close(rank.socket);
  if (mpirun_pid_ > 0) {
    kill(mpirun_pid_, SIGTERM);
    for (int i = 0; i < 100 && waitpid(mpirun_pid_, nullptr, WNOHANG) == 0; ++i) usleep(20 * 1000);
    kill(mpirun_pid_, SIGKILL);
    waitpid(mpirun_pid_, nullptr, 0);
  }
  for (Rank& rank : ranks_)
    if (rank.pid > 0) kill(rank.pid, SIGKILL);
  reap(ranks_);
  ranks_.clear();
  mpirun_pid_ = -1;
  if (!scratch_.empty()) {
    std::error_code ignored;
    fs::remove_all(scratch_, ignored);
    scratch_.clear();
  }
}

}  // namespace labkit
