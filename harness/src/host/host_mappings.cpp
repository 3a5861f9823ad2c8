#include "labkit/host.h"

#include "labkit/cuda_check.h"
#include "labkit/managed_memory.h"
#include "labkit/shared_memory.h"

#include <dlfcn.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace labkit {

wire::Reply failure(wire::Status status, const std::string& text, cudaError_t code) {
  wire::Reply reply;
  reply.status = status;
  reply.cuda_error = int(code);
  wire::set_text(reply.message, sizeof reply.message, text.c_str());
  return reply;
}

void send_reply(int socket, const wire::Reply& reply) {
  if (send(socket, &reply, sizeof reply, MSG_NOSIGNAL) != ssize_t(sizeof reply)) std::_Exit(0);
}

void* load_module(const std::string& path) {
  if (path.empty()) return nullptr;
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) throw std::runtime_error(std::string("cannot load your compiled code: ") + dlerror());
  return module;
}

void serve_requests(int socket, const std::function<wire::Reply(const wire::Request&, int fd)>& handle) {
  wire::Request request;
  int fd = -1;
  while (wire::receive_request(socket, request, fd)) {
    wire::Reply reply;
    try {
      reply = handle(request, fd);
    } catch (const CudaError& error) {
      reply = failure(wire::Status::cuda_error, error.what(), error.code());
    } catch (const std::exception& error) {
      reply = failure(wire::Status::failed, error.what());
    } catch (...) {
      reply = failure(wire::Status::failed, "your code threw a C++ exception out of the contract function");
    }
    send_reply(socket, reply);
  }
}

// A managed allocation's copy, and whether it was filled since it was last reset.
struct HostMappings::Managed {
  explicit Managed(std::size_t bytes) : mirror(bytes) {}
  ManagedMirror mirror;
  bool used = true;  // nothing staged yet
};

HostMappings::HostMappings() = default;
HostMappings::~HostMappings() = default;

void HostMappings::map(const wire::Request& request, int fd) {
  ExportedAllocation exported;
  exported.fd = fd;
  exported.bytes = std::size_t(request.bytes);
  exported.kind = MemoryKind(request.memory);
  exported.device = request.device;
  if (exported.kind != MemoryKind::device && exported.kind != MemoryKind::host && exported.kind != MemoryKind::managed)
    throw std::invalid_argument("a map request names an unknown kind of memory");
  allocations_[request.id] = std::make_unique<ImportedAllocation>(exported);
  if (exported.kind == MemoryKind::managed) managed_[request.id] = std::make_unique<Managed>(exported.bytes);
}

void HostMappings::remove(std::uint64_t id) {
  managed_.erase(id);
  allocations_.erase(id);
}

void* HostMappings::address(std::uint64_t id, std::uint64_t offset) const {
  const auto found = allocations_.find(id);
  if (found == allocations_.end() || offset > found->second->bytes())
    throw std::invalid_argument("a pointer argument names memory this process was not given");
  if (const auto managed = managed_.find(id); managed != managed_.end()) {
    if (managed->second->mirror.data() == nullptr)
      throw std::logic_error("a managed argument was not copied into managed memory before the call");
    return static_cast<char*>(managed->second->mirror.data()) + offset;
  }
  return found->second->data() + offset;
}

void HostMappings::stage(std::uint64_t id) {
  const auto found = managed_.find(id);
  if (found == managed_.end()) throw std::invalid_argument("a stage request names no managed allocation of this process");
  found->second->mirror.reset();
  found->second->used = false;
}

std::vector<std::uint64_t> HostMappings::managed_arguments(const wire::Request& request) const {
  std::vector<std::uint64_t> ids;
  for (std::uint32_t i = 0; i < request.argument_count && i < std::uint32_t(wire::max_arguments); ++i) {
    const wire::Argument& argument = request.arguments[i];
    if (argument.kind == wire::ArgumentKind::pointer && managed_.count(argument.bits) &&
        std::find(ids.begin(), ids.end(), argument.bits) == ids.end())
      ids.push_back(argument.bits);
  }
  return ids;
}

std::string HostMappings::fill_managed(const wire::Request& request, bool reset_used) {
  std::string advised;
  for (const std::uint64_t id : managed_arguments(request)) {
    Managed& managed = *managed_.at(id);
    if (managed.used && reset_used) {
      managed.mirror.reset();
    } else {
      // Staged before the window, nothing of the submission's may have prepared it since. The
      // empty call asks too (and ignores the answer), so that both windows hold the question.
      const std::string found = managed.mirror.advice_since_reset();
      if (!managed.used && advised.empty()) advised = found;
    }
    managed.mirror.fill(allocations_.at(id)->data());
    managed.used = true;
  }
  return advised;
}

void HostMappings::copy_back_managed(const wire::Request& request) {
  for (const std::uint64_t id : managed_arguments(request)) managed_.at(id)->mirror.copy_back(allocations_.at(id)->data());
}

}  // namespace labkit
