#include "child_process.h"

#include "labkit/shared_memory.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace labkit::child {

int timing_cpu() {
  static const int cpu = [] {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return -1;
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    char* end = nullptr;
    const long gpu = visible != nullptr ? std::strtol(visible, &end, 10) : 0;
    const int slot = end != nullptr && *end == '\0' && gpu > 0 ? int(gpu) : 0;
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    return cpus[cpus.size() - 1 - std::size_t(slot) % (cpus.size() - 1)];
  }();
  return cpu;
}

int gpu_device_files(const std::string& fd_folder) {
  int count = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(fd_folder, error)) {
    const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (target.rfind("/dev/nvidia", 0) == 0 && target.size() > 11 && std::isdigit(static_cast<unsigned char>(target[11])))
      ++count;
  }
  return count;
}

namespace {

// An affinity is a thread's, so a running process has each of its threads moved (the threads
// they start inherit it). A hint for steadier timing: failing is harmless.
void set_process_affinity(pid_t pid, const cpu_set_t& set) {
  std::error_code unreadable;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", unreadable))
    sched_setaffinity(pid_t(std::strtol(task.path().filename().c_str(), nullptr, 10)), sizeof set, &set);
}

}  // namespace

void pin_to_cpu(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pid == 0)
    sched_setaffinity(0, sizeof set, &set);
  else
    set_process_affinity(pid, set);
}

void leave_cpu(int cpu) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) return;
  CPU_CLR(cpu, &set);
  set_process_affinity(getpid(), set);
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string make_scratch(const std::string& kind) {
  std::string pattern = "/tmp/labkit-" + kind + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a scratch folder in /tmp");
  if (geteuid() == 0 && chown(pattern.c_str(), nobody, nobody) != 0)
    throw std::runtime_error("cannot hand the scratch folder to nobody");
  return pattern;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

std::vector<std::string> base_environment(const std::string& scratch, char** ours) {
  std::vector<std::string> variables = {"HOME=" + scratch, "TMPDIR=" + scratch, "LANG=C.UTF-8",
                                        "CUDA_CACHE_PATH=" + scratch + "/cuda-cache"};
  for (char** entry = ours; entry != nullptr && *entry != nullptr; ++entry)
    for (const char* name : {"PATH=", "LD_LIBRARY_PATH=", "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=",
                             "LABKIT_DISABLE_DEFENCES="})
      if (starts_with(*entry, name)) variables.emplace_back(*entry);
  return variables;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::vector<std::uint64_t> buffers_to_map(const wire::Request& call, const std::set<std::uint64_t>& mapped) {
  std::vector<std::uint64_t> ids;
  for (std::uint32_t i = 0; i < call.argument_count && i < std::uint32_t(wire::max_arguments); ++i) {
    const wire::Argument& argument = call.arguments[i];
    const bool known = mapped.count(argument.bits) || std::find(ids.begin(), ids.end(), argument.bits) != ids.end();
    if (argument.kind == wire::ArgumentKind::pointer && !known) ids.push_back(argument.bits);
  }
  return ids;
}

std::vector<std::uint64_t> freed_buffers(const std::set<std::uint64_t>& mapped) {
  std::vector<std::uint64_t> ids;
  for (const std::uint64_t id : mapped)
    if (!shared_allocation_live(id)) ids.push_back(id);
  return ids;
}

MapRequest map_request(std::uint64_t id) {
  const ExportedAllocation exported = export_shared(id);
  MapRequest map;
  map.request.op = wire::Op::map;
  map.request.id = id;
  map.request.bytes = exported.bytes;
  map.request.memory = std::uint32_t(exported.kind);
  map.request.device = exported.device;
  map.fd = exported.fd;
  return map;
}

wire::Request unmap_request(std::uint64_t id) {
  wire::Request unmap;
  unmap.op = wire::Op::unmap;
  unmap.id = id;
  return unmap;
}

wire::Request stage_request(std::uint64_t id) {
  wire::Request stage;
  stage.op = wire::Op::stage;
  stage.id = id;
  return stage;
}

}  // namespace labkit::child
