// Memory that a second process can map. Every DeviceBuffer is allocated through CUDA's
// virtual memory management with a POSIX file descriptor as its shareable handle, and every
// HostBuffer is a memfd that both processes map and pin, so the process that runs a
// submission's code maps exactly the buffers it is handed (sent as file descriptors over a
// socket) and nothing else the checks hold: no expected output, no reference result, no other
// process's memory. A managed buffer is host memory of the same kind that the submission's
// process hands its code as CUDA managed memory (cudaMallocManaged), which no second process
// can map: that process copies it into managed memory of its own before each call
// (labkit/managed_memory.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace labkit {

enum class MemoryKind : std::uint32_t { device, host, managed };

// An allocation of at least `bytes` (a multiple of the device's granularity, 2 MiB on
// Hopper) on the current device, mapped read-write for it and for every device that can
// reach it as a peer, and remembered so that a pointer into it can be named to another
// process by (id, offset).
void* allocate_shared(std::size_t bytes);
// Page-locked host memory of at least `bytes`, pinned for every device: a memfd, so the
// other process maps the same pages (and pins them too). `kind` is host or managed: the two
// differ only in what the submission's process makes of them.
void* allocate_shared_host(std::size_t bytes, MemoryKind kind = MemoryKind::host);
void free_shared(void* address);  // either kind

// From now on, place each device allocation's bytes at the END of its mapping (16-byte
// aligned, as a float4 needs; not cudaMalloc's 256) rather than at its start. Used when the
// submission's process runs under compute-sanitizer: a read just past a buffer then leaves
// the mapping, where memcheck sees it, instead of landing in the rounding up to the 2 MiB
// granularity. Checks that pad their buffers with guard bands leave them out then.
void place_device_buffers_at_mapping_end();
bool device_buffers_at_mapping_end();

struct SharedLocation {
  std::uint64_t id = 0;      // unique for the life of the process: never reused
  std::size_t offset = 0;    // of the pointer within the allocation
  std::size_t bytes = 0;     // of the whole allocation
};

// The allocation that holds `address`; throws std::logic_error when none does (the checks
// handed a submission memory that was not allocated through DeviceBuffer).
SharedLocation locate_shared(const void* address);

// True while the allocation has not been freed.
bool shared_allocation_live(std::uint64_t id);

// A new file descriptor for the allocation, for sending to another process (the caller
// closes it), and the allocation's size, which the other process maps.
struct ExportedAllocation {
  int fd = -1;
  std::size_t bytes = 0;
  MemoryKind kind = MemoryKind::device;
  int device = 0;  // where device memory lives (an ordinal under the same CUDA_VISIBLE_DEVICES)
};
ExportedAllocation export_shared(std::uint64_t id);

// The importing side: maps an allocation received as a file descriptor (which it closes)
// and unmaps it when destroyed.
class ImportedAllocation {
public:
  explicit ImportedAllocation(const ExportedAllocation& exported);
  ~ImportedAllocation();
  ImportedAllocation(const ImportedAllocation&) = delete;
  ImportedAllocation& operator=(const ImportedAllocation&) = delete;

  char* data() const { return reinterpret_cast<char*>(address_); }
  std::size_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

private:
  unsigned long long address_ = 0;
  unsigned long long handle_ = 0;  // device memory only
  std::size_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::device;
};

}  // namespace labkit
