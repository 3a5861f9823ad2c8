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
  if (const char* fd = std::getenv(protocol::env::result_fd)) channel_fd = std::atoi(fd);
  if (const char* token = std::getenv(protocol::env::result_token)) channel_token = token;
  unsetenv(protocol::env::result_fd);
  unsetenv(protocol::env::result_token);
}

void emit_result(const protocol::Record& record) {
  if (channel_fd < 0) return;
  nlohmann::json json = protocol::to_json(record);
  json["token"] = channel_token;
  const std::string line = json.dump() + "\n";
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(channel_fd, line.data() + written, line.size() - written);
    if (n <= 0) return;  // the grader went away; nothing useful left to do
    written += std::size_t(n);
  }
}

}  // namespace labkit
