// The host's table of mapped buffers (labkit/host.h) where it needs no GPU: the requests it
// refuses before touching CUDA, and calls that name no managed buffer, which it leaves alone.
#include "labkit/host.h"
#include "labkit/shared_memory.h"

#include <doctest/doctest.h>

#include <stdexcept>

namespace {

using labkit::HostMappings;
namespace wire = labkit::wire;

wire::Argument pointer(std::uint64_t id) {
  wire::Argument argument;
  argument.kind = wire::ArgumentKind::pointer;
  argument.bits = id;
  return argument;
}

}  // namespace

TEST_SUITE("host mappings") {
  TEST_CASE("a map request of an unknown kind of memory is refused") {
    HostMappings mappings;
    wire::Request map;
    map.op = wire::Op::map;
    map.id = 1;
    map.bytes = 4096;
    map.memory = std::uint32_t(labkit::MemoryKind::managed) + 1;
    CHECK_THROWS_AS(mappings.map(map, -1), std::invalid_argument);
  }

  TEST_CASE("a stage request for a buffer that is not a mapped managed one is refused") {
    HostMappings mappings;
    CHECK_THROWS_AS(mappings.stage(5), std::invalid_argument);
  }

  TEST_CASE("a call that names no managed buffer copies nothing and finds no advice") {
    HostMappings mappings;
    wire::Request call;
    call.arguments[0] = pointer(9);  // not mapped: fill_managed leaves it to the call to refuse
    call.arguments[1].bits = 9;      // a value whose bits equal an id is still a value
    call.argument_count = 2;
    CHECK(mappings.fill_managed(call, true).empty());
    CHECK(mappings.fill_managed(call, false).empty());
    mappings.copy_back_managed(call);
    CHECK_THROWS_AS(mappings.address(9, 0), std::invalid_argument);
  }
}
