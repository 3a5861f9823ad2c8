// The messages between a lab's checks (trusted) and the process that runs the submission's
// code (untrusted), over a SOCK_SEQPACKET socket pair: one fixed-size struct per message,
// device memory passed as file descriptors. The checks never believe more of a reply than
// "the call returned, with this status": outputs are read from device memory they own.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sys/socket.h>
#include <type_traits>

namespace labkit::wire {

constexpr int max_arguments = 16;
constexpr std::size_t name_bytes = 64;
constexpr std::size_t message_bytes = 2048;

// One argument of a contract function. Pointers travel as (allocation id, offset), since the
// two processes map the same memory at different addresses; the stream is the host's own.
enum class ArgumentKind : std::uint32_t { value, pointer, null_pointer, stream };

struct Argument {
  ArgumentKind kind = ArgumentKind::value;
  std::uint32_t unused = 0;
  std::uint64_t bits = 0;    // a value's bytes, or a pointer's allocation id
  std::uint64_t offset = 0;  // a pointer's offset within its allocation
};

enum class Op : std::uint32_t {
  map,                   // the file descriptor that comes with the message is allocation `id`
  unmap,                 // allocation `id` was freed by the checks
  call,                  // call `function` with `arguments`; `timed`: events around it
  poison_shared_memory,  // fill every SM's shared memory with `pattern` (lab 02's checks)
  noop,                  // a timed kernel that spins `spin_ns`: the round trip of an honest call that long
  stage,                 // managed allocation `id`: its managed memory reset, every page back on the host
};

// A managed allocation (map with `memory` 2) reaches the submission as managed memory of the
// host's own (labkit/managed_memory.h): a pointer argument into it names the host's copy. A
// call first copies the allocation into that copy on the CPU (after a `stage`, or resetting it
// first when none came since the last call), then the events start; an untimed call copies it
// back once it has returned. A `noop` whose arguments name managed allocations copies them in
// the same way before its kernel, so the empty call moves what the call moves. A `stage` is
// untimed, sent before the window of a timed call opens: the costly part of the reset (the
// pages first touched one by one) stays out of it.

struct Request {
  Op op = Op::call;
  std::uint32_t argument_count = 0;
  std::uint64_t id = 0;
  std::uint64_t bytes = 0;
  std::uint32_t memory = 0;      // map: 0 device memory, 1 host memory, 2 managed (labkit::MemoryKind)
  std::int32_t device = 0;       // map: the device that holds device memory
  std::uint32_t timed = 0;
  std::uint32_t host_clock = 0;  // timed calls: time by the host's clock, every device synchronised
  std::uint32_t pattern = 0;
  std::uint64_t spin_ns = 0;
  char function[name_bytes] = {};
  Argument arguments[max_arguments] = {};
};

enum class Status : std::uint32_t {
  ok,
  cuda_error,  // `cuda_error` says which; the context may be lost
  failed,      // anything else: `message` says what
};

struct Reply {
  Status status = Status::ok;
  std::int32_t cuda_error = 0;
  double event_ms = 0;             // timed calls: the host's own events or clock (to be confirmed)
  std::uint64_t return_bits = 0;   // a non-void contract function's result
  char message[message_bytes] = {};
};

inline void set_text(char* field, std::size_t size, const char* text) {
  std::strncpy(field, text, size - 1);
  field[size - 1] = '\0';
}

// Values that can cross: arithmetic types and enums up to 8 bytes, copied bit for bit.
template <class T>
constexpr bool is_plain_value = (std::is_arithmetic_v<T> || std::is_enum_v<T>) && sizeof(T) <= 8;

template <class T>
std::uint64_t to_bits(T value) {
  static_assert(is_plain_value<T>, "contract functions take pointers, a cudaStream_t and plain numbers");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class T>
T from_bits(std::uint64_t bits) {
  static_assert(is_plain_value<T>, "contract functions take pointers, a cudaStream_t and plain numbers");
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// One request over a Unix socket, with the file descriptor of a map request beside it
// (SCM_RIGHTS). Both return whether the whole request went through.
inline bool send_request(int socket, const Request& request, int fd) {
  iovec io{const_cast<Request*>(&request), sizeof request};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
  }
  return sendmsg(socket, &message, MSG_NOSIGNAL) == ssize_t(sizeof request);
}

// `fd` is -1 when no descriptor came with the request.
inline bool receive_request(int socket, Request& request, int& fd) {
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec io{&request, sizeof request};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  if (recvmsg(socket, &message, MSG_CMSG_CLOEXEC) != ssize_t(sizeof request)) return false;
  fd = -1;
  if (const cmsghdr* header = CMSG_FIRSTHDR(&message); header && header->cmsg_type == SCM_RIGHTS)
    std::memcpy(&fd, CMSG_DATA(header), sizeof fd);
  return true;
}

}  // namespace labkit::wire
