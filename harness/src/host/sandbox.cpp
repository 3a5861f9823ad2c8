#include "labkit/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

// Rights newer than some distributions' kernel headers (Debian 12 stops at ABI 2); the values
// are the kernel's ABI and only used when the running kernel reports that ABI.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

namespace labkit {

namespace {

constexpr uid_t nobody = 65534;

// landlock_ruleset_attr as of ABI 6, for headers that stop earlier; a kernel of an earlier
// ABI accepts the longer form while the fields it does not know are zero.
struct RulesetAttributes {
  std::uint64_t handled_access_fs = 0;
  std::uint64_t handled_access_net = 0;
  std::uint64_t scoped = 0;
};
constexpr std::uint64_t scope_signal = 1ULL << 1;  // LANDLOCK_SCOPE_SIGNAL
constexpr int first_abi_with_scopes = 6;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("sandbox: " + what + ": " + std::strerror(errno));
}

// A tool the host runs under (compute-sanitizer, ncu), as the runner named it in the host's
// environment before any of the submission's code could run (remote.cpp). The variables are
// removed on the first call so the submission does not see them.
struct HostTool {
  std::string name;    // empty: no tool
  std::string folder;  // where the tool's injected libraries live
};

const HostTool& host_tool() {
  static const HostTool tool = [] {
    HostTool named;
    if (const char* name = std::getenv("LABKIT_TOOL")) named.name = name;
    if (const char* folder = std::getenv("LABKIT_TOOL_DIR")) named.folder = folder;
    unsetenv("LABKIT_TOOL");
    unsetenv("LABKIT_TOOL_DIR");
    return named;
  }();
  return tool;
}

// Nsight Compute reads the GPU's performance counters from the profiled process, which the
// driver allows only to the user that may profile (root by default): under ncu the host keeps
// its user. Profiling is a student's own look at their code, never a grading run.
bool keeps_user_for(const HostTool& tool) { return tool.name == "ncu"; }

std::string user_in_force() {
  const uid_t user = geteuid();
  if (user == nobody) return "uid " + std::to_string(nobody) + " (nobody)";
  if (user == 0) return keeps_user_for(host_tool()) ? "uid 0 (kept: ncu reads the GPU's counters)" : "uid 0";
  return "uid " + std::to_string(user);
}

// Folders whose files any CUDA program needs: the C and C++ runtimes, the driver's
// libraries (loaded lazily, e.g. the PTX JIT) and its device files, /sys, and of /proc only
// this process's own entries and the system-wide ones the runtime reads: other processes'
// command lines stay out of sight. Not /usr/local/cuda: the toolkit's libraries (cuBLAS...)
// stay shut.
const char* const system_folders[] = {"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share", "/etc", "/sys",
                                      "/dev", "/usr/local/nvidia", "/run/nvidia-persistenced", "/proc/self",
                                      "/proc/thread-self", "/proc/driver", "/proc/sys", "/proc/cpuinfo",
                                      "/proc/meminfo", "/proc/stat", "/proc/filesystems"};

// Libraries this process has already mapped that live elsewhere (a shared CUDA runtime in
// the toolkit folder, say): each file on its own, not its folder.
std::set<std::string> mapped_libraries() {
  std::set<std::string> files;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash != std::string::npos && line.find(".so") != std::string::npos) files.insert(line.substr(slash));
  }
  return files;
}

// The GPU's device files and /dev/null; not /dev/shm, which two hosts could share.
std::vector<std::string> writable_devices() {
  std::vector<std::string> devices = {"/dev/null"};
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", error))
    if (entry.path().filename().string().rfind("nvidia", 0) == 0) devices.push_back(entry.path().string());
  return devices;
}

std::uint64_t file_rights(int abi) {
  std::uint64_t rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;
  if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return rights;
}

std::uint64_t all_rights(int abi) {
  std::uint64_t rights = file_rights(abi) | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                         LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                         LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                         LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
  return rights;
}

constexpr std::uint64_t read_rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;

// Grants `rights` beneath `path` (a file gets only the rights that apply to files).
// Paths that do not exist on this machine are skipped.
void allow(int ruleset, const std::string& path, std::uint64_t rights, int abi) {
  const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return;
  struct stat info{};
  if (fstat(fd, &info) == 0 && !S_ISDIR(info.st_mode)) rights &= file_rights(abi);
  landlock_path_beneath_attr rule{};
  rule.allowed_access = rights & all_rights(abi);
  rule.parent_fd = fd;
  const long added = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  close(fd);
  if (added != 0) fail("landlock_add_rule " + path);
}

// Under a tool: its folder readable (libraries it loads late), and /dev/shm, through which
// the tools' injected code and their front end may talk. Nothing of the kit's.
// The tools' front ends are often scripts in the toolkit's bin/ that start the real program
// elsewhere: the folders of the libraries the tool injected (CUDA_INJECTION64_PATH, and those
// already mapped from its install) are where it loads more from.
std::set<std::string> tool_library_folders() {
  std::set<std::string> folders;
  if (const char* injected = std::getenv("CUDA_INJECTION64_PATH"))
    folders.insert(std::filesystem::path(injected).parent_path().string());
  for (const std::string& file : mapped_libraries())
    if (file.find("nsight-compute") != std::string::npos || file.find("compute-sanitizer") != std::string::npos)
      folders.insert(std::filesystem::path(file).parent_path().string());
  return folders;
}

void allow_tool(int ruleset, const HostTool& tool, int abi) {
  if (tool.name.empty()) return;
  if (!tool.folder.empty()) allow(ruleset, tool.folder, read_rights, abi);
  for (const std::string& folder : tool_library_folders())
    if (!folder.empty()) allow(ruleset, folder, read_rights, abi);
  allow(ruleset, "/dev/shm", all_rights(abi), abi);
}

std::string restrict_files(const SandboxPolicy& policy, const HostTool& tool) {
  const int abi = int(syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION));
  if (abi < 1) return "no Landlock in this kernel: files are not fenced off";
  RulesetAttributes attributes{};
  attributes.handled_access_fs = all_rights(abi);
  const bool scoped = policy.scope_signals && abi >= first_abi_with_scopes;
  if (scoped) attributes.scoped = scope_signal;
  const int ruleset = int(syscall(SYS_landlock_create_ruleset, &attributes, sizeof attributes, 0));
  if (ruleset < 0) fail("landlock_create_ruleset");
  for (const char* folder : system_folders) allow(ruleset, folder, read_rights, abi);
  for (const std::string& device : writable_devices())
    allow(ruleset, device, read_rights | LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 5 ? LANDLOCK_ACCESS_FS_IOCTL_DEV : 0), abi);
  for (const std::string& file : mapped_libraries()) allow(ruleset, file, read_rights, abi);
  for (const std::string& file : policy.readable_files) allow(ruleset, file, read_rights, abi);
  if (!policy.scratch_dir.empty()) allow(ruleset, policy.scratch_dir, all_rights(abi), abi);
  for (const std::string& path : policy.writable_paths)
    allow(ruleset, path, read_rights | file_rights(abi), abi);
  allow_tool(ruleset, tool, abi);
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) fail("landlock_restrict_self");
  close(ruleset);
  return "Landlock ABI " + std::to_string(abi) + (scoped ? ", signals scoped" : "");
}

}  // namespace

void leave_root() {
  if (geteuid() != 0 || keeps_user_for(host_tool())) return;
  if (setgroups(0, nullptr) != 0 || setresgid(nobody, nobody, nobody) != 0 || setresuid(nobody, nobody, nobody) != 0)
    fail("cannot switch to user nobody");
}

// A process that is the first of its PID namespace sees no process outside it.
static std::string pid_namespace_in_force() { return getpid() == 1 ? ", a PID namespace of its own" : ""; }

std::string enter_sandbox(const SandboxPolicy& policy) {
  const HostTool& tool = host_tool();
  if (!policy.keep_user) leave_root();
  const std::string user = user_in_force();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
  const std::string under = tool.name.empty() ? "" : ", under " + tool.name + " (its folder and /dev/shm readable)";
  return user + ", " + restrict_files(policy, tool) + pid_namespace_in_force() + under;
}

}  // namespace labkit
