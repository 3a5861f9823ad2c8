#include "labkit/gpu_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace labkit {

std::vector<int> open_gpu_locks(const std::string& paths) {
  std::vector<int> opened;
  std::stringstream list(paths);
  for (std::string path; std::getline(list, path, ':');) {
    if (path.empty()) continue;
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      const std::string why = std::strerror(errno);
      for (const int open_fd : opened) ::close(open_fd);
      throw std::runtime_error("cannot open the GPU lock file " + path + " (" + why +
                               "): without it, timing would not have the GPU alone");
    }
    opened.push_back(fd);
  }
  return opened;
}

void lock_gpus(const std::vector<int>& fds, int how) {
  for (const int fd : fds) {
    int locked;
    while ((locked = ::flock(fd, how)) != 0 && errno == EINTR) {
    }
    if (locked != 0) throw std::runtime_error(std::string("cannot lock a GPU lock file: ") + std::strerror(errno));
  }
}

}  // namespace labkit
