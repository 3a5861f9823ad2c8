#include "labkit/host.h"

#include "labkit/shared_memory.h"

#include <stdexcept>

namespace labkit {

HostMappings::HostMappings() = default;
HostMappings::~HostMappings() = default;

void HostMappings::add(std::uint64_t id, std::unique_ptr<ImportedAllocation> allocation) {
  allocations_[id] = std::move(allocation);
}

void HostMappings::remove(std::uint64_t id) { allocations_.erase(id); }

void* HostMappings::address(std::uint64_t id, std::uint64_t offset) const {
  const auto found = allocations_.find(id);
  if (found == allocations_.end() || offset > found->second->bytes())
    throw std::invalid_argument("a pointer argument names memory this process was not given");
  return found->second->data() + offset;
}

}  // namespace labkit
