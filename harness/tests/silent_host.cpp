// A stand-in for a lab's host: it greets the runner as a host does, then takes every call and
// answers none. What a call still running looks like to HostProcess, with no GPU and no
// submission (test_sandbox.cpp, "host process").
#include "labkit/wire.h"

#include <sys/socket.h>

namespace {
constexpr int socket_fd = 3;  // where HostProcess hands a host its end
}

int main() {
  labkit::wire::Reply hello;
  labkit::wire::set_text(hello.message, sizeof hello.message, "a silent test host");
  if (send(socket_fd, &hello, sizeof hello, 0) != ssize_t(sizeof hello)) return 1;
  labkit::wire::Request request;
  while (recv(socket_fd, &request, sizeof request, 0) > 0) {
  }
  return 0;
}
