// Device memory that a second process can map. Every DeviceBuffer is allocated through
// CUDA's virtual memory management with a POSIX file descriptor as its shareable handle, so
// the process that runs a submission's code maps exactly the buffers it is handed (sent as
// file descriptors over a socket) and nothing else the checks hold: no expected output, no
// reference result, no other process's memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace labkit {

// An allocation of at least `bytes` (a multiple of the device's granularity, 2 MiB on
// Hopper), mapped read-write for the current device and remembered so that a pointer into it
// can be named to another process by (id, offset).
void* allocate_shared(std::size_t bytes);
void free_shared(void* address);

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
};
ExportedAllocation export_shared(std::uint64_t id);

// The importing side: maps an allocation received as a file descriptor (which it closes)
// and unmaps it when destroyed.
class ImportedAllocation {
public:
  ImportedAllocation(int fd, std::size_t bytes);
  ~ImportedAllocation();
  ImportedAllocation(const ImportedAllocation&) = delete;
  ImportedAllocation& operator=(const ImportedAllocation&) = delete;

  char* data() const { return reinterpret_cast<char*>(address_); }
  std::size_t bytes() const { return bytes_; }

private:
  unsigned long long address_ = 0;
  unsigned long long handle_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace labkit
