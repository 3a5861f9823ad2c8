#include "labkit/host.h"

#include "labkit/shared_memory.h"

#include <stdexcept>

namespace labkit {

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
