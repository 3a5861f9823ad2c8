#include "labkit/dataset.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {
std::string write_temp(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / "labkit-test-dataset.yaml";
  std::ofstream(path) << text;
  return path.string();
}
}  // namespace

TEST_SUITE("dataset") {
  TEST_CASE("cases read sizes as people write them, defaults and lab parameters") {
    const auto path = write_temp(R"(
lab: demo
defaults: {lo: -5, hi: 5, k: 3}
correctness:
  - {name: a, n: 2^10, distribution: uniform, seed: 4}
  - {name: b, n: 100Mi, distribution: few_distinct, distinct: 3, hidden: true, k: 7}
performance:
  - {name: p, n: 1Gi, seed: 9, alpha: 0.5}
)");
    const labkit::Dataset d = labkit::load_dataset(path);
    REQUIRE(d.correctness.size() == 2);
    REQUIRE(d.performance.size() == 1);
    CHECK(d.lab == "demo");
    CHECK(d.correctness[0].n == 1024);
    CHECK(d.correctness[0].input.lo == -5);
    CHECK(d.correctness[0].integer("k") == 3);
    CHECK(d.correctness[1].n == 100u << 20);
    CHECK(d.correctness[1].hidden);
    CHECK(d.correctness[1].input.distinct == 3);
    CHECK(d.correctness[1].integer("k") == 7);
    CHECK(d.performance[0].n == std::size_t(1) << 30);
    CHECK(d.performance[0].number("alpha") == 0.5);
    CHECK(d.performance[0].integer("missing", 11) == 11);
    CHECK_THROWS_WITH(d.performance[0].integer("missing"), doctest::Contains("has no 'missing'"));
  }

  TEST_CASE("a run seed changes every case's seed") {
    const auto path = write_temp("correctness:\n  - {name: a, n: 1, seed: 4}\nperformance: []\n");
    CHECK(labkit::load_dataset(path).correctness[0].input.seed == 4);
    CHECK(labkit::load_dataset(path, 99).correctness[0].input.seed != 4);
  }

  TEST_CASE("a bad size or file gives a clear error") {
    CHECK_THROWS_WITH(labkit::load_dataset(write_temp("correctness:\n  - {name: a, n: 12 bytes}\n")),
                      doctest::Contains("cannot read size"));
    CHECK_THROWS_WITH(labkit::load_dataset("/nonexistent/file.yaml"), doctest::Contains("cannot read dataset"));
  }

  TEST_CASE("benchmark cases are read apart from the graded ones, with the same fields and defaults") {
    const auto path = write_temp(R"(
defaults: {lo: -5, hi: 5, k: 3}
correctness:
  - {name: a, n: 7}
performance:
  - {name: p-big, n: 2^20, seed: 9}
  - {name: p-small, n: 2^10}
benchmark:
  - {name: b-small, n: 2^10, distribution: all_same, k: 4}
  - {name: b-middle, n: 2^16}
)");
    const labkit::Dataset d = labkit::load_dataset(path);
    REQUIRE(d.benchmark.size() == 2);
    CHECK(d.correctness.size() == 1);
    CHECK(d.performance.size() == 2);
    CHECK(d.benchmark[0].kind == "benchmark");
    CHECK(d.benchmark[0].input.distribution == labkit::Distribution::all_same);
    CHECK(d.benchmark[0].input.lo == -5);
    CHECK(d.benchmark[0].integer("k") == 4);
    CHECK(d.benchmark[1].integer("k") == 3);

    std::vector<std::string> names;
    for (const labkit::Case& c : labkit::benchmark_cases(d)) names.push_back(c.name + " " + c.kind);
    CHECK(names == std::vector<std::string>{"p-small performance", "b-small benchmark", "b-middle benchmark",
                                            "p-big performance"});
  }

  TEST_CASE("a dataset without benchmark cases has none, and its benchmark times the performance cases") {
    const labkit::Dataset d = labkit::load_dataset(write_temp("performance:\n  - {name: p, n: 5}\n"));
    CHECK(d.benchmark.empty());
    REQUIRE(labkit::benchmark_cases(d).size() == 1);
    CHECK(labkit::benchmark_cases(d)[0].name == "p");
  }

  TEST_CASE("a case repeated no times is refused: it would make no call and pass") {
    CHECK_THROWS_WITH(labkit::load_dataset(write_temp("correctness:\n  - {name: dot-0, n: 7, repeats: 0}\n")),
                      doctest::Contains("case 'dot-0' has repeats: 0"));
    CHECK_THROWS_WITH(
        labkit::load_dataset(write_temp("defaults: {repeats: 0}\ncorrectness:\n  - {name: a, n: 7}\n")),
        doctest::Contains("pass while checking nothing"));
    CHECK(labkit::load_dataset(write_temp("correctness:\n  - {name: a, n: 7, repeats: 1}\n"))
              .correctness[0].integer("repeats") == 1);
  }
}
