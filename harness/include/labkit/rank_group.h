// The checks' side of a lab whose submission runs as one process per GPU under mpirun (lab
// 13, part 2): the ranks play the host's part (labkit/host.h), one each. The runner starts
// `mpirun -np G` on the lab's rank program, each rank connects back to a socket in a scratch
// folder, receives its GPU's buffers as file descriptors, and calls the submission's function
// when told "go". The verdict and the time stay here: outputs are read from memory the runner
// owns, and a call is timed by our clock from the first "go" to the last answer.
//
// mpirun and its ranks are fenced off from the start: the rank program, started by the runner
// with `--launch`, drops root and enters the sandbox (labkit/sandbox.h) before it becomes
// mpirun, so nothing mpirun starts (MPI_Comm_spawn included) can reach the kit, other
// submissions or the runner. Each rank enters a sandbox of its own again after MPI_Init and
// CUDA's start-up, before it loads the submission (labkit/rank_host.h).
#pragma once

#include "labkit/outcome.h"
#include "labkit/wire.h"

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace labkit {

struct RankGroupOptions {
  std::string mpirun;   // the mpirun program (find_mpirun)
  std::string program;  // the lab's rank program, which is also the sandboxed launcher
  std::string module;   // the compiled submission the ranks load
  int ranks = 2;        // one per GPU: rank r uses GPU r
  double call_seconds = 5;     // a later call still running after this is a hang
  double start_seconds = 120;  // mpirun, MPI_Init and CUDA's start-up, and the first call (NCCL's set-up)
  int max_hangs = 2;           // after this many hangs, further calls are refused at once
};

// `mpirun` on PATH, or none.
std::optional<std::string> find_mpirun();

// Why a group cannot run here: "" when it can. Each reason reads as "not run: needs MPI (...)".
std::string why_ranks_cannot_run(const std::string& program, const std::string& module,
                                 const std::optional<std::string>& mpirun);

// The environment mpirun and its ranks start with: where programs and libraries are, which
// GPUs, a scratch home, NCCL's settings (multicast off unless asked for) and Open MPI's own
// variables from ours. Nothing else: no result channel, token, secret or seed.
std::vector<std::string> rank_environment(const std::string& scratch, char** ours);

// The launcher's and mpirun's command line (rank_group.cpp says why each MCA setting).
std::vector<std::string> launch_command(const RankGroupOptions& options, const std::string& scratch,
                                        const std::string& socket_path);

class RankGroup {
public:
  explicit RankGroup(RankGroupOptions options);
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  // One call on every rank (requests[r] for rank r; pointer arguments name DeviceBuffer
  // memory, sent to that rank first). Starts the group on first use. Returns our clock's time
  // from the first "go" to the last answer, in ms. A CUDA error in a rank throws CudaError, a
  // crash, hang or refusal SubmissionFailure; either way the group is stopped, and the next
  // call starts a fresh one.
  double call(std::vector<wire::Request> requests);
  void stop();  // ends mpirun and every rank now

  bool running() const { return mpirun_pid_ > 0; }
  const std::string& sandbox() const { return sandbox_; }  // from rank 0's greeting

private:
  struct Rank {
    int socket = -1;
    pid_t pid = -1;  // from the connection's credentials: killed by stop()
    std::set<std::uint64_t> mapped;
  };

  void start();
  void accept_ranks(int listener);
  void send(Rank& rank, int index, const wire::Request& request, int fd = -1);
  wire::Reply receive(int index, double seconds, const char* doing);
  void map_buffers(Rank& rank, int index, const wire::Request& request);
  void unmap_freed(Rank& rank, int index);
  std::vector<wire::Reply> receive_all(double seconds);
  [[noreturn]] void fail(const std::string& message, protocol::Outcome outcome = protocol::Outcome::failed);
  std::string mpirun_log_tail() const;

  RankGroupOptions options_;
  pid_t mpirun_pid_ = -1;
  std::string scratch_;
  std::string sandbox_;
  std::vector<Rank> ranks_;
  bool first_call_ = true;
  int hangs_ = 0;
};

}  // namespace labkit
