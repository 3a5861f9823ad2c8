#include "labkit/results.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace labkit {

namespace {
int channel_fd = -1;
std::string channel_token;
}  // namespace

void open_result_channel_from_environment() {
  if (const char* fd = std::getenv("LABKIT_RESULT_FD")) channel_fd = std::atoi(fd);
  if (const char* token = std::getenv("LABKIT_RESULT_TOKEN")) channel_token = token;
  unsetenv("LABKIT_RESULT_FD");
  unsetenv("LABKIT_RESULT_TOKEN");
}

void emit_result(nlohmann::json record) {
  if (channel_fd < 0) return;
  record["token"] = channel_token;
  const std::string line = record.dump() + "\n";
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(channel_fd, line.data() + written, line.size() - written);
    if (n <= 0) return;  // the grader went away; nothing useful left to do
    written += std::size_t(n);
  }
}

}  // namespace labkit
