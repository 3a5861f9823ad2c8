// The host: the process that runs a submission's code. It is started by a lab's checks,
// maps the device buffers they send, calls the contract's functions when asked, and replies
// with a status. It holds no result channel, token, secret, expected output or reference
// code, and it drops what it can of the machine before loading the submission
// (labkit/sandbox.h). Each lab's host is this library plus a table of the contract's
// functions, generated at build time from the lab's header (harness/src/host/host_contract.cpp.in).
#pragma once

#include "labkit/wire.h"

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace labkit {

class ImportedAllocation;
class ManagedMirror;

// What a host and an MPI rank share (harness/src/host/host_mappings.cpp): a failed reply, sending a
// reply (the process ends quietly once the checks have gone), loading the submission's module,
// and the loop that answers the checks' requests until they close the socket, with whatever
// `handle` throws turned into a failed reply.
wire::Reply failure(wire::Status status, const std::string& text, cudaError_t code = cudaSuccess);
void send_reply(int socket, const wire::Reply& reply);
void* load_module(const std::string& path);  // runs its constructors: call it inside the sandbox
void serve_requests(int socket, const std::function<wire::Reply(const wire::Request&, int fd)>& handle);

// The buffers the checks have sent, by allocation id, and the managed copies of the managed
// ones (labkit/wire.h says when each is reset, filled and copied back).
class HostMappings {
public:
  HostMappings();
  ~HostMappings();  // unmaps what is left
  // Maps the allocation a map request describes, whose file descriptor came with it.
  void map(const wire::Request& request, int fd);
  void remove(std::uint64_t id);
  // The address of (id, offset): for a managed allocation, in its managed copy. Throws
  // std::invalid_argument when the id is unknown or the offset is past the allocation.
  void* address(std::uint64_t id, std::uint64_t offset) const;

  // A `stage` request: managed allocation `id`'s managed memory reset (labkit/managed_memory.h).
  void stage(std::uint64_t id);
  // Before a call (or an empty call): every managed allocation the request's arguments name is
  // copied into its managed copy. `reset_used`: one that was filled since its last stage is reset
  // first (a call; the empty call keeps its copy, which only the CPU ever touches). Returns ""
  // or, when a staged copy was advised or prefetched before the call began, what was found.
  std::string fill_managed(const wire::Request& request, bool reset_used);
  // After an untimed call: the managed copies go back into the allocations the checks read.
  void copy_back_managed(const wire::Request& request);

private:
  struct Managed;
  std::vector<std::uint64_t> managed_arguments(const wire::Request& request) const;

  std::map<std::uint64_t, std::unique_ptr<ImportedAllocation>> allocations_;
  std::map<std::uint64_t, std::unique_ptr<Managed>> managed_;
};

template <class T>
T decode_argument(const wire::Argument& argument, const HostMappings& mappings, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, cudaStream_t>) {
    return stream;
  } else if constexpr (std::is_pointer_v<T>) {
    if (argument.kind == wire::ArgumentKind::null_pointer) return nullptr;
    return static_cast<T>(mappings.address(argument.bits, argument.offset));
  } else {
    return wire::from_bits<T>(argument.bits);
  }
}

// Calls `symbol` as an `R(Args...)` with the request's arguments, in order.
template <class R, class... Args, std::size_t... Index>
std::uint64_t invoke_with(R (*)(Args...), std::index_sequence<Index...>, void* symbol, const wire::Request& request,
                          const HostMappings& mappings, cudaStream_t stream) {
  auto* function = reinterpret_cast<R (*)(Args...)>(symbol);
  std::tuple<Args...> values{decode_argument<Args>(request.arguments[Index], mappings, stream)...};
  if constexpr (std::is_void_v<R>) {
    std::apply(function, values);
    return 0;
  } else {
    return wire::to_bits(std::apply(function, values));
  }
}

struct ContractFunction {
  const char* name;
  std::size_t argument_count;
  std::uint64_t (*invoke)(void* symbol, const wire::Request&, const HostMappings&, cudaStream_t);
};

template <class Fn>
struct ContractInvoker;
template <class R, class... Args>
struct ContractInvoker<R(Args...)> {
  static std::uint64_t invoke(void* symbol, const wire::Request& request, const HostMappings& mappings,
                              cudaStream_t stream) {
    return invoke_with(static_cast<R (*)(Args...)>(nullptr), std::index_sequence_for<Args...>{}, symbol, request,
                       mappings, stream);
  }
  static constexpr std::size_t argument_count = sizeof...(Args);
};

// One entry of the contract table: LABKIT_CONTRACT_FUNCTION(histogram).
#define LABKIT_CONTRACT_FUNCTION(fn)                                                              \
  ::labkit::ContractFunction {                                                                    \
    #fn, ::labkit::ContractInvoker<decltype(fn)>::argument_count, &::labkit::ContractInvoker<decltype(fn)>::invoke \
  }

// Defined by each lab's generated file; ends with an entry whose name is null.
extern const ContractFunction contract_functions[];

}  // namespace labkit
