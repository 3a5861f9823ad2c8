// Which devices a run sees (grade::visible_devices): a one-GPU lab one device, whatever the
// machine has, taken from the grader's own CUDA_VISIBLE_DEVICES where it was given one.
#include "runner_client.h"

#include <doctest/doctest.h>

#include <stdexcept>

TEST_SUITE("visible devices") {
  TEST_CASE("without a list, the batch's GPU numbers are the devices") {
    CHECK(grade::visible_devices(0, 1, nullptr) == "0");
    CHECK(grade::visible_devices(3, 1, "") == "3");
    CHECK(grade::visible_devices(0, 2, nullptr) == "0,1");
  }

  TEST_CASE("with a list (Slurm's, say), the batch's GPUs are its entries in order") {
    CHECK(grade::visible_devices(0, 1, "2,3") == "2");
    CHECK(grade::visible_devices(1, 1, "2,3") == "3");
    CHECK(grade::visible_devices(0, 2, "GPU-aa,GPU-bb,GPU-cc") == "GPU-aa,GPU-bb");
  }

  TEST_CASE("a batch GPU past the end of the list is an error, never another device") {
    CHECK_THROWS_AS(grade::visible_devices(2, 1, "2,3"), std::invalid_argument);
    CHECK_THROWS_AS(grade::visible_devices(0, 3, "2,3"), std::invalid_argument);
  }
}
