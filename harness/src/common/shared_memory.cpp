#include "labkit/shared_memory.h"

#include "labkit/cuda_check.h"
#include "labkit/device.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace labkit {

namespace {

// The driver's virtual-memory calls, fetched through the runtime so that nothing links
// against libcuda: without a driver (CI) the programs still start and skip cleanly.
struct DriverCalls {
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemExportToShareableHandle_v10020 export_handle = nullptr;
  PFN_cuMemImportFromShareableHandle_v10020 import_handle = nullptr;
  PFN_cuGetErrorString_v6000 error_string = nullptr;
};

template <class Fn>
void fetch(const char* name, Fn& fn) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &address, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || address == nullptr)
    throw std::runtime_error(std::string("the CUDA driver has no ") + name);
  fn = reinterpret_cast<Fn>(address);
}

const DriverCalls& driver() {
  static const DriverCalls calls = [] {
    DriverCalls c;
    fetch("cuMemGetAllocationGranularity", c.granularity);
    fetch("cuMemCreate", c.create);
    fetch("cuMemRelease", c.release);
    fetch("cuMemAddressReserve", c.reserve);
    fetch("cuMemAddressFree", c.address_free);
    fetch("cuMemMap", c.map);
    fetch("cuMemUnmap", c.unmap);
    fetch("cuMemSetAccess", c.set_access);
    fetch("cuMemExportToShareableHandle", c.export_handle);
    fetch("cuMemImportFromShareableHandle", c.import_handle);
    fetch("cuGetErrorString", c.error_string);
    return c;
  }();
  return calls;
}

void check_driver(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* text = "unknown error";
  if (driver().error_string != nullptr) driver().error_string(result, &text);
  throw CudaError(cudaErrorUnknown, std::string(call) + " failed: " + text);
}

int current_ordinal() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

CUmemAllocationProp allocation_properties() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = current_ordinal();
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

std::size_t rounded_to_granularity(std::size_t bytes) {
  static const std::size_t granularity = [] {
    const CUmemAllocationProp prop = allocation_properties();
    std::size_t g = 0;
    check_driver(driver().granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
    return g;
  }();
  const std::size_t wanted = bytes > 0 ? bytes : 1;
  return (wanted + granularity - 1) / granularity * granularity;
}

// The devices that may touch memory on `owner`: itself and its peers (multi-GPU labs read
// and write each other's buffers over NVLink).
std::vector<CUmemAccessDesc> access_for(int owner) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  std::vector<CUmemAccessDesc> access;
  for (int device = 0; device < count; ++device) {
    int peer = device == owner;
    if (!peer) CUDA_CHECK(cudaDeviceCanAccessPeer(&peer, device, owner));
    if (!peer) continue;
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access.push_back(desc);
  }
  return access;
}

// Each mapping is followed by an unmapped guard of this many bytes of address space, so a
// read past a buffer placed at the end of its mapping faults (and memcheck names it) rather
// than landing in a neighbouring allocation.
constexpr std::size_t guard_bytes = std::size_t(2) << 20;

// Reserves an address range, maps `handle` (memory on `owner`) there and opens it to the
// devices that can reach it.
CUdeviceptr map_read_write(CUmemGenericAllocationHandle handle, std::size_t bytes, int owner) {
  CUdeviceptr address = 0;
  check_driver(driver().reserve(&address, bytes + guard_bytes, 0, 0, 0), "cuMemAddressReserve");
  check_driver(driver().map(address, bytes, 0, handle, 0), "cuMemMap");
  const std::vector<CUmemAccessDesc> access = access_for(owner);
  check_driver(driver().set_access(address, bytes, access.data(), access.size()), "cuMemSetAccess");
  return address;
}

// Maps a memfd's pages and pins them for every device.
char* map_host(int fd, std::size_t bytes) {
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) throw std::runtime_error("cannot map " + std::to_string(bytes) + " bytes of shared host memory");
  const cudaError_t pinned = cudaHostRegister(address, bytes, cudaHostRegisterPortable);
  if (pinned != cudaSuccess) {
    munmap(address, bytes);
    throw CudaError(pinned, std::string("cudaHostRegister of shared host memory failed: ") + cudaGetErrorString(pinned));
  }
  return static_cast<char*>(address);
}

void unmap_host(void* address, std::size_t bytes) {
  cudaHostUnregister(address);
  munmap(address, bytes);
}

void unmap(CUdeviceptr address, CUmemGenericAllocationHandle handle, std::size_t bytes) {
  driver().unmap(address, bytes);
  driver().address_free(address, bytes + guard_bytes);
  driver().release(handle);
}

struct Allocation {
  std::uint64_t id;
  CUmemGenericAllocationHandle handle;  // device memory
  std::size_t bytes;
  MemoryKind kind;
  int device;   // device memory: where it lives
  int fd;       // host memory: its memfd
};

// Live allocations by start address. A mutex, since a lab's checks may allocate from more
// than one thread.
struct Registry {
  std::mutex mutex;
  std::map<CUdeviceptr, Allocation> by_address;
  std::uint64_t next_id = 1;
};

Registry& registry() {
  static Registry r;
  return r;
}

std::atomic<bool> buffers_at_mapping_end{false};

// The live allocation whose mapping holds `address`, or none. The caller holds the mutex.
std::map<CUdeviceptr, Allocation>::iterator containing(CUdeviceptr address) {
  auto& allocations = registry().by_address;
  auto after = allocations.upper_bound(address);
  if (after == allocations.begin()) return allocations.end();
  const auto found = std::prev(after);
  return address < found->first + found->second.bytes ? found : allocations.end();
}

}  // namespace

void* allocate_shared(std::size_t bytes) {
  const std::size_t size = rounded_to_granularity(bytes);
  const CUmemAllocationProp prop = allocation_properties();
  CUmemGenericAllocationHandle handle = 0;
  const CUresult created = driver().create(&handle, size, &prop, 0);
  if (created == CUDA_ERROR_OUT_OF_MEMORY)
    throw CudaError(cudaErrorMemoryAllocation, "out of device memory allocating " + std::to_string(size) + " bytes");
  check_driver(created, "cuMemCreate");
  const int device = current_ordinal();
  const CUdeviceptr address = map_read_write(handle, size, device);
  std::lock_guard lock(registry().mutex);
  registry().by_address[address] = {registry().next_id++, handle, size, MemoryKind::device, device, -1};
  const std::size_t used = (std::max<std::size_t>(bytes, 1) + 15) / 16 * 16;
  return reinterpret_cast<void*>(buffers_at_mapping_end ? address + (size - used) : address);
}

void place_device_buffers_at_mapping_end() { buffers_at_mapping_end = true; }
bool device_buffers_at_mapping_end() { return buffers_at_mapping_end; }

void* allocate_shared_host(std::size_t bytes, MemoryKind kind) {
  if (kind == MemoryKind::device) throw std::invalid_argument("allocate_shared_host: device memory is allocate_shared's");
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
  const int fd = memfd_create("labkit-host-buffer", MFD_CLOEXEC);
  if (fd < 0) throw std::runtime_error("memfd_create failed");
  if (ftruncate(fd, off_t(size)) != 0) {
    close(fd);
    throw std::runtime_error("cannot size shared host memory of " + std::to_string(size) + " bytes");
  }
  char* address = nullptr;
  try {
    address = map_host(fd, size);
  } catch (...) {
    close(fd);
    throw;
  }
  std::lock_guard lock(registry().mutex);
  registry().by_address[reinterpret_cast<CUdeviceptr>(address)] = {registry().next_id++, 0, size, kind, -1, fd};
  return address;
}

void free_shared(void* address) {
  Allocation allocation{};
  CUdeviceptr start = 0;
  {
    std::lock_guard lock(registry().mutex);
    const auto found = containing(reinterpret_cast<CUdeviceptr>(address));
    if (found == registry().by_address.end()) return;
    start = found->first;
    allocation = found->second;
    registry().by_address.erase(found);
  }
  // Work still queued on the buffer must finish before its memory goes; an error is left for
  // the next call to report.
  (void)synchronize_every_device();
  if (allocation.kind != MemoryKind::device) {
    unmap_host(reinterpret_cast<void*>(start), allocation.bytes);
    close(allocation.fd);
  } else {
    unmap(start, allocation.handle, allocation.bytes);
  }
}

SharedLocation locate_shared(const void* address) {
  const auto target = reinterpret_cast<CUdeviceptr>(address);
  std::lock_guard lock(registry().mutex);
  if (const auto found = containing(target); found != registry().by_address.end())
    return {found->second.id, std::size_t(target - found->first), found->second.bytes};
  throw std::logic_error("a pointer handed to the submission is not in a DeviceBuffer: the lab's checks must "
                         "allocate everything they pass through labkit::DeviceBuffer");
}

bool shared_allocation_live(std::uint64_t id) {
  std::lock_guard lock(registry().mutex);
  for (const auto& [start, allocation] : registry().by_address)
    if (allocation.id == id) return true;
  return false;
}

ExportedAllocation export_shared(std::uint64_t id) {
  Allocation found{};
  {
    std::lock_guard lock(registry().mutex);
    for (const auto& [start, allocation] : registry().by_address)
      if (allocation.id == id) found = allocation;
  }
  if (found.id == 0) throw std::logic_error("export_shared: no live allocation " + std::to_string(id));
  ExportedAllocation exported;
  exported.bytes = found.bytes;
  exported.kind = found.kind;
  exported.device = found.device;
  if (found.kind != MemoryKind::device) {
    exported.fd = dup(found.fd);
    if (exported.fd < 0) throw std::runtime_error("cannot duplicate a shared host buffer's descriptor");
    return exported;
  }
  check_driver(driver().export_handle(&exported.fd, found.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
               "cuMemExportToShareableHandle");
  return exported;
}

ImportedAllocation::ImportedAllocation(const ExportedAllocation& exported)
    : bytes_(exported.bytes), kind_(exported.kind) {
  if (kind_ != MemoryKind::device) {
    try {
      address_ = reinterpret_cast<unsigned long long>(map_host(exported.fd, bytes_));
    } catch (...) {
      close(exported.fd);
      throw;
    }
    close(exported.fd);
    return;
  }
  CUmemGenericAllocationHandle handle = 0;
  const CUresult imported = driver().import_handle(&handle, reinterpret_cast<void*>(std::intptr_t(exported.fd)),
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(exported.fd);
  check_driver(imported, "cuMemImportFromShareableHandle");
  handle_ = handle;
  address_ = map_read_write(handle, bytes_, exported.device);
}

ImportedAllocation::~ImportedAllocation() {
  (void)synchronize_every_device();
  if (kind_ != MemoryKind::device)
    unmap_host(reinterpret_cast<void*>(address_), bytes_);
  else
    unmap(address_, handle_, bytes_);
}

}  // namespace labkit
