// Where a run goes: the devices it sees (grade::visible_devices), one for a one-GPU lab whatever
// the machine has, taken from the grader's own CUDA_VISIBLE_DEVICES where it was given one;
// and the CPUs it may use (grade::cpu_share), its GPU's share of the grader's.
#include "runner_client.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

TEST_SUITE("run placement") {
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

  TEST_CASE("each GPU's runs get a contiguous share of the grader's CPUs, together all of them") {
    const std::vector<int> ours = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    CHECK(grade::cpu_share(ours, 0, 1) == ours);
    CHECK(grade::cpu_share(ours, 0, 4) == std::vector<int>{0, 1});
    CHECK(grade::cpu_share(ours, 1, 4) == std::vector<int>{2, 3, 4});
    CHECK(grade::cpu_share(ours, 3, 4) == std::vector<int>{7, 8, 9});
    CHECK(grade::cpu_share({4, 6, 9, 11}, 1, 2) == std::vector<int>{9, 11});
  }

  TEST_CASE("with fewer CPUs than GPUs, every run may use them all") {
    CHECK(grade::cpu_share({0, 1}, 2, 4) == std::vector<int>{0, 1});
  }
}
