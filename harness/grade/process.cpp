#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace grade {

namespace {

constexpr std::size_t output_tail_bytes = 6000;
constexpr double max_uncounted_seconds = 3600;

// Process groups of the children now running, so an interrupt can stop them all. A fixed
// array of atomics: readable from a signal handler without locks.
constexpr int max_children = 64;
std::atomic<pid_t> running_children[max_children];
std::atomic<bool> stopping_children{false};  // lock-free, so kill_all_children stays async-signal-safe

void remember_child(pid_t pid, bool running) {
  for (auto& slot : running_children) {
    pid_t expected = running ? 0 : pid;
    if (slot.compare_exchange_strong(expected, running ? pid : 0)) return;
  }
}

std::string read_tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > std::streamoff(output_tail_bytes) ? size - std::streamoff(output_tail_bytes) : 0;
  in.seekg(start);
  std::string text(std::size_t(size - start), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  return (start > 0 ? "[... earlier output cut ...]\n" : "") + text;
}

// Threads this user runs now: RLIMIT_NPROC counts every one of them, so the child's cap is
// this plus its own allowance. (The kernel does not apply the cap to root.)
rlim_t threads_of_this_user() {
  rlim_t count = 0;
  const std::string uid = "\t" + std::to_string(getuid()) + "\t";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    std::ifstream status(entry.path() / "status");
    bool mine = false;
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0) mine = line.find(uid) != std::string::npos;
      if (mine && line.rfind("Threads:", 0) == 0) count += rlim_t(std::stoul(line.substr(8)));
    }
  }
  return count;
}

void set_limit(int resource, rlim_t value) {
  const rlimit limit{value, value};
  setrlimit(resource, &limit);
}

// In the child, between fork and exec: only async-signal-safe work.
[[noreturn]] void become_child(const ChildRequest& request, const ChildLimits& limits, int log_fd,
                               std::vector<char*>& argv, std::vector<char*>& envp, const cpu_set_t* cpus) {
  setpgid(0, 0);
  if (cpus != nullptr) sched_setaffinity(0, sizeof *cpus, cpus);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  set_limit(RLIMIT_CPU, rlim_t(limits.cpu_seconds));
  set_limit(RLIMIT_FSIZE, rlim_t(limits.file_size_bytes));
  set_limit(RLIMIT_CORE, 0);
  set_limit(RLIMIT_NPROC, limits.process_limit);
  if (!request.working_directory.empty() && chdir(request.working_directory.c_str()) != 0) _exit(126);
  execvpe(argv[0], argv.data(), envp.data());
  const char message[] = "grade: cannot execute the program: ";
  [[maybe_unused]] auto ignored = write(STDERR_FILENO, message, sizeof message - 1);
  ignored = write(STDERR_FILENO, argv[0], strlen(argv[0]));
  ignored = write(STDERR_FILENO, "\n", 1);
  _exit(127);
}

std::vector<std::string> child_environment(const ChildRequest& request, int result_fd) {
  std::map<std::string, std::string> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const auto eq = text.find('=');
    if (eq != std::string::npos) variables[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& name : request.hidden_variables) variables.erase(name);
  for (const auto& [name, value] : request.environment) variables[name] = value;
  if (result_fd >= 0) {
    variables["LABKIT_RESULT_FD"] = std::to_string(result_fd);
    variables["LABKIT_RESULT_TOKEN"] = request.result_token;
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : variables) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Splits what arrived on the channel into lines, keeping an unfinished last line pending.
void take_lines(std::string& pending, std::vector<std::string>& lines) {
  std::size_t start = 0, end;
  while ((end = pending.find('\n', start)) != std::string::npos) {
    lines.push_back(pending.substr(start, end - start));
    start = end + 1;
  }
  pending.erase(0, start);
}

}  // namespace

std::string ChildOutcome::describe() const {
  if (timed_out && uncounted_seconds >= 1)
    return "timed out after " + std::to_string(int(wall_seconds - uncounted_seconds)) + " s of its own (and " +
           std::to_string(int(uncounted_seconds)) + " s waiting for the GPU or timing the reference) and was killed";
  if (timed_out) return "timed out after " + std::to_string(int(wall_seconds)) + " s and was killed";
  if (signal == SIGXCPU) return "used up its CPU-time limit (a host-side loop that never ends?)";
  if (signal == SIGXFSZ) return "wrote more output than allowed";
  if (signal != 0) return std::string("killed by SIG") + sigabbrev_np(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exit_code);
}

void kill_all_children() {
  stopping_children = true;  // before the kills: a child that ends after them is seen as stopped
  for (auto& slot : running_children)
    if (const pid_t pid = slot.load(); pid > 0) kill(-pid, SIGKILL);
}

bool children_stopped() { return stopping_children; }

std::string random_token() {
  std::random_device device;
  std::uniform_int_distribution<unsigned> digit(0, 15);
  std::string token;
  for (int i = 0; i < 32; ++i) token += "0123456789abcdef"[digit(device)];
  return token;
}

ChildOutcome run_child(const ChildRequest& request, const ChildLimits& limits) {
  int channel[2] = {-1, -1};
  if (request.result_channel && pipe2(channel, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  int child_end = -1;
  if (request.result_channel) {
    child_end = fcntl(channel[1], F_DUPFD, 100);  // inherited by the child, not close-on-exec
  }
  const int log_fd = open(request.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("cannot write " + request.log_path);

  ChildLimits child_limits = limits;
  child_limits.process_limit = threads_of_this_user() + rlim_t(limits.extra_processes);
  std::vector<std::string> argv_strings = request.argv;
  std::vector<std::string> env_strings = child_environment(request, child_end);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);

  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (const int cpu : request.cpus) CPU_SET(cpu, &cpus);

  const auto started = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) become_child(request, child_limits, log_fd, argv, envp, request.cpus.empty() ? nullptr : &cpus);
  setpgid(pid, pid);  // also here, so the group exists before we might kill it
  remember_child(pid, true);
  close(log_fd);
  if (request.result_channel) {
    close(channel[1]);
    close(child_end);
  }

  ChildOutcome outcome;
  std::string pending;
  int status = 0;
  bool exited = false;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  auto uncounted = [&] {
    return request.uncounted_seconds ? std::min(request.uncounted_seconds(), max_uncounted_seconds) : 0.0;
  };
  while (!exited) {
    if (channel[0] >= 0) {
      pollfd poll_fd{channel[0], POLLIN, 0};
      if (poll(&poll_fd, 1, 100) > 0) {
        char buffer[65536];
        const ssize_t n = read(channel[0], buffer, sizeof buffer);
        if (n > 0) {
          const std::size_t known = outcome.result_lines.size();
          pending.append(buffer, std::size_t(n));
          take_lines(pending, outcome.result_lines);
          if (request.on_result_line)
            for (std::size_t i = known; i < outcome.result_lines.size(); ++i) request.on_result_line(outcome.result_lines[i]);
        }
        if (n == 0) close(channel[0]), channel[0] = -1;
      }
    } else {
      usleep(50 * 1000);
    }
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited && elapsed() - uncounted() > limits.wall_seconds) {
      outcome.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
    }
  }
  kill(-pid, SIGKILL);  // whatever the child left behind in its group
  remember_child(pid, false);
  if (channel[0] >= 0) {
    // Drain what is already written; a grandchild holding the pipe open cannot stall us.
    fcntl(channel[0], F_SETFL, O_NONBLOCK);
    char buffer[65536];
    ssize_t n;
    while ((n = read(channel[0], buffer, sizeof buffer)) > 0) pending.append(buffer, std::size_t(n));
    take_lines(pending, outcome.result_lines);
    close(channel[0]);
  }
  outcome.wall_seconds = elapsed();
  outcome.uncounted_seconds = uncounted();
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !outcome.timed_out) outcome.signal = WTERMSIG(status);
  outcome.output_tail = read_tail(request.log_path);
  return outcome;
}

}  // namespace grade
