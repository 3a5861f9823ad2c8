// Every lab in the kit is complete and consistent: rubric, dataset, student files and their
// mirror in solutions/.
#include "catalog.h"
#include "labkit/dataset.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>

namespace fs = std::filesystem;

TEST_SUITE("catalog") {
  TEST_CASE("every lab's rubric, dataset and files agree") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    REQUIRE(!labs.empty());
    for (const grade::LabSpec& lab : labs) {
      CAPTURE(lab.dir);
      const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
      CHECK(!dataset.correctness.empty());
      CHECK(lab.correctness_points > 0);
      std::set<std::string> names;
      for (const auto& c : dataset.correctness) CHECK_MESSAGE(names.insert(c.name).second, "duplicate case " << c.name);
      std::set<std::string> performance_names;
      for (const auto& c : dataset.performance) performance_names.insert(c.name);
      for (const auto& p : lab.performance) {
        CHECK_MESSAGE(performance_names.count(p.case_name), "rubric names a case the dataset lacks: " << p.case_name);
        CHECK(p.zero_credit_ratio < p.full_credit_ratio);
      }
      for (const std::string& file : lab.student_files) {
        CHECK_MESSAGE(fs::exists(fs::path(LABKIT_TEST_SOURCE_ROOT) / "labs" / lab.dir / file), file);
        CHECK_MESSAGE(fs::exists(fs::path(LABKIT_TEST_SOURCE_ROOT) / "solutions" / lab.dir / file),
                      "solutions/ must mirror the student file " << file);
      }
      CHECK(fs::exists(fs::path(LABKIT_TEST_SOURCE_ROOT) / "labs" / lab.dir / "README.md"));
    }
  }

  TEST_CASE("a lab's extra build flags are read from lab.yaml") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const grade::LabSpec& quicksort = grade::find_lab(labs, "quicksort");
    CHECK(quicksort.nvcc_flags == std::vector<std::string>{"-rdc=true"});
    CHECK(quicksort.link_libraries == std::vector<std::string>{"cudadevrt"});
    const grade::LabSpec& histogram = grade::find_lab(labs, "histogram");
    CHECK(histogram.nvcc_flags.empty());
    CHECK(histogram.link_libraries.empty());
  }

  TEST_CASE("labs are found by number, name or folder") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    CHECK(grade::find_lab(labs, "01").dir == "01-histogram");
    CHECK(grade::find_lab(labs, "1").dir == "01-histogram");
    CHECK(grade::find_lab(labs, "histogram").dir == "01-histogram");
    CHECK(grade::find_lab(labs, "01-histogram").dir == "01-histogram");
    CHECK_THROWS_WITH(grade::find_lab(labs, "99"), doctest::Contains("the labs are: 01-histogram"));
  }
}
