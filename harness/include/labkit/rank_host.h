// The rank's side of labkit/rank_group.h: what a lab's rank program (one process per GPU,
// started by mpirun) does after MPI_Init. It connects to the runner, enters the sandbox,
// loads the submission's module and serves requests, as the host does (labkit/host.h), until
// the runner closes the connection or kills it. The same program, started with `--launch`,
// is the sandboxed launcher that becomes mpirun.
#pragma once

#include "labkit/host.h"

#include <functional>
#include <string>

namespace labkit {

struct RankHostOptions {
  std::string socket;   // the runner's socket (--socket)
  std::string module;   // the submission (--module)
  std::string scratch;  // the only folder it may write (--scratch)
  int rank = 0;
  int device = 0;  // this rank's GPU; -1: none (the kit's CPU test of the protocol)
};

// Reads --socket, --module and --scratch; rank and device are the caller's.
RankHostOptions parse_rank_arguments(int argc, char** argv);

// Calls the contract function at `symbol` with the request's arguments (the lab's adapter:
// it supplies what cannot cross the wire, such as the MPI communicator).
using RankInvoke = std::function<void(void* symbol, const wire::Request&, const HostMappings&, cudaStream_t)>;

// Serves the runner until it hangs up. `function` is the one contract function a rank calls.
// Returns the process's exit status.
int serve_rank(const RankHostOptions& options, const char* function, const RankInvoke& invoke);

// `PROGRAM --launch --module M --scratch S -- mpirun ARGS...`: enters the sandbox (user
// nobody when root; reading only the system's files, this program's libraries, mpirun, the
// module and /proc; writing only the scratch folder), then becomes mpirun. Returns only on
// failure, with the exit status to use.
int launch_in_sandbox(int argc, char** argv);

// True when argv asks for the launcher.
bool launching(int argc, char** argv);

}  // namespace labkit
