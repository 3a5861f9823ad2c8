// Runs a child process the way a grader must: its own process group, a wall-clock limit,
// CPU-time, file-size and core-dump limits, output to a log file of bounded size, and an
// optional result channel (a pipe the grader owns).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace grade {

struct ChildLimits {
  int wall_seconds = 300;
  int cpu_seconds = 600;
  long long file_size_bytes = 64ll << 20;  // also caps what the child can print
  int extra_processes = 256;                 // processes and threads the child may add
  unsigned long process_limit = 0;           // worked out by run_child
};

struct ChildOutcome {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  double wall_seconds = 0;
  double uncounted_seconds = 0;           // of wall_seconds, what the limit did not count
  std::string output_tail;                // the end of stdout and stderr together
  std::vector<std::string> result_lines;  // what arrived on the result channel
  std::string describe() const;           // "exit 0", "killed by SIGSEGV", "timed out after 300 s"
};

struct ChildRequest {
  std::vector<std::string> argv;
  std::map<std::string, std::string> environment;  // added to ours
  std::vector<std::string> hidden_variables;        // removed from ours (the instructor's secret)
  std::string log_path;
  std::string working_directory;
  bool result_channel = false;
  std::string result_token;
  std::function<void(const std::string&)> on_result_line;  // called as each line arrives (progress)
  // The seconds so far that the wall-clock limit does not count (the child waiting on others,
  // as it says on its result channel); none when empty. They count up to an hour at most, so
  // a child that stops its clock and never starts it again still ends.
  std::function<double()> uncounted_seconds;
  std::vector<int> cpus;  // the CPUs it may run on (sched_setaffinity); ours when empty
};

ChildOutcome run_child(const ChildRequest& request, const ChildLimits& limits);

// Kills the process group of every child still running (on Ctrl-C). Async-signal-safe. From
// then on children_stopped() is true: what a child's end says after it (killed, crashed, no
// result) is the grader's doing, not the submission's, and must not be saved as its result.
void kill_all_children();
bool children_stopped();

// A random hex string: the result channel's token.
std::string random_token();

}  // namespace grade
