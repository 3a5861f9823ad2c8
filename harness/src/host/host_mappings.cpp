#include "labkit/host.h"

#include "labkit/cuda_check.h"
#include "labkit/shared_memory.h"

#include <dlfcn.h>
#include <sys/socket.h>

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

HostMappings::HostMappings() = default;
HostMappings::~HostMappings() = default;

void HostMappings::map(const wire::Request& request, int fd) {
  ExportedAllocation exported;
  exported.fd = fd;
  exported.bytes = std::size_t(request.bytes);
  exported.kind = MemoryKind(request.memory);
  exported.device = request.device;
  allocations_[request.id] = std::make_unique<ImportedAllocation>(exported);
}

void HostMappings::remove(std::uint64_t id) { allocations_.erase(id); }

void* HostMappings::address(std::uint64_t id, std::uint64_t offset) const {
  const auto found = allocations_.find(id);
  if (found == allocations_.end() || offset > found->second->bytes())
    throw std::invalid_argument("a pointer argument names memory this process was not given");
  return found->second->data() + offset;
}

}  // namespace labkit
