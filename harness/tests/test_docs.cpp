// The READMEs' rendered blocks (harness/grade/docs.h): every block holds what the records give
// under today's rubrics, so a figure changes in one place (a record, a rubric) and the command
// named in the failure carries it to every README.
#include "catalog.h"
#include "docs.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace {

std::string rendered_as_name(const std::string& block) { return "[" + block + "]"; }

}  // namespace

TEST_SUITE("docs") {
  TEST_CASE("every rendered block in the kit's Markdown matches the records") {
    const auto catalog = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const auto files = grade::docs::render_all(LABKIT_TEST_SOURCE_ROOT, catalog);
    REQUIRE_MESSAGE(!files.empty(), "no file holds a block: README.md and each lab's README should");
    for (const grade::docs::FileBlocks& file : files) {
      CAPTURE(file.file.string());
      for (const std::string& block : file.refreshed.stale)
        CHECK_MESSAGE(false, file.file.string() << ": the block `" << block << "` differs from what the records "
                                                << "give: run `" << std::string(grade::docs::refresh_command) << "`");
    }
  }

  TEST_CASE("each lab's README shows what its three versions earn, and the policy README every lab's") {
    const auto catalog = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const auto files = grade::docs::render_all(LABKIT_TEST_SOURCE_ROOT, catalog);
    const auto blocks_of = [&](const fs::path& file) {
      for (const grade::docs::FileBlocks& f : files)
        if (f.file == file) return f.refreshed.blocks;
      return std::vector<std::string>{};
    };
    for (const grade::LabSpec& lab : catalog) {
      const auto blocks = blocks_of(fs::path("labs") / lab.dir / "README.md");
      CHECK_MESSAGE(std::count(blocks.begin(), blocks.end(), "tiers " + lab.id) == 1,
                    "labs/" << lab.dir << "/README.md needs one <!-- labkit:tiers " << lab.id
                            << " --> block (then run `" << std::string(grade::docs::refresh_command) << "`)");
    }
    const auto policy = blocks_of(fs::path("grading") / "policy" / "README.md");
    CHECK(std::count(policy.begin(), policy.end(), "tiers all") == 1);
  }

  TEST_CASE("a block's content is replaced and the text around it kept") {
    const std::string text = "# Title\n\nBefore.\n<!-- labkit:tiers 01 -->\nold\n<!-- /labkit:tiers -->\nAfter.\n";
    const auto refreshed = grade::docs::refresh_text(text, rendered_as_name);
    CHECK(refreshed.text ==
          "# Title\n\nBefore.\n<!-- labkit:tiers 01 -->\n\n[tiers 01]\n\n<!-- /labkit:tiers -->\nAfter.\n");
    CHECK(refreshed.blocks == std::vector<std::string>{"tiers 01"});
    CHECK(refreshed.stale == std::vector<std::string>{"tiers 01"});
    // Rendered once more, nothing is stale and nothing moves.
    const auto again = grade::docs::refresh_text(refreshed.text, rendered_as_name);
    CHECK(again.text == refreshed.text);
    CHECK(again.stale.empty());
    // A marker quoted inside a line is prose, not a block.
    const std::string quoted = "Write `<!-- labkit:tiers 01 -->` above the table.";
    CHECK(grade::docs::refresh_text(quoted, rendered_as_name).text == quoted);
  }

  TEST_CASE("a block never closed, or closed by another kind, is an error that names its line") {
    CHECK_THROWS_WITH_AS(grade::docs::refresh_text("a\n<!-- labkit:tiers 01 -->\nb\n", rendered_as_name),
                         doctest::Contains("line 2"), std::runtime_error);
    CHECK_THROWS_WITH_AS(
        grade::docs::refresh_text("<!-- labkit:tiers 01 -->\n<!-- /labkit:other -->\n", rendered_as_name),
        doctest::Contains("line 2"), std::runtime_error);
  }

  TEST_CASE("a lab's rubric block lists its timed cases as its lab.yaml scores them") {
    const auto catalog = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const grade::LabSpec& lab = *std::find_if(catalog.begin(), catalog.end(), [](const grade::LabSpec& l) {
      return !l.performance.empty();
    });
    const std::string block = grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "rubric " + lab.id);
    for (const grade::PerformanceRubric& timed : lab.performance) {
      CAPTURE(timed.case_name);
      CHECK(block.find("| `" + timed.case_name + "` | " + timed.about + " | ") != std::string::npos);
    }
    CHECK(block.find("lab.yaml") != std::string::npos);
  }

  TEST_CASE("a part's rubric block keeps the timed cases its prefixes name, and no other") {
    const auto catalog = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const grade::LabSpec& lab = *std::find_if(catalog.begin(), catalog.end(), [](const grade::LabSpec& l) {
      return l.id == "13";
    });
    const std::string block = grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "rubric 13 mpi-");
    for (const grade::PerformanceRubric& timed : lab.performance) {
      CAPTURE(timed.case_name);
      const bool listed = block.find("| `" + timed.case_name + "` |") != std::string::npos;
      CHECK(listed == (timed.case_name.rfind("mpi-", 0) == 0));
    }
    CHECK(grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "rubric 13 reduce-scatter-,allgather-")
              .find("`allgather-256MiB`") != std::string::npos);
    CHECK_THROWS_AS(grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "rubric 13 nothing-"),
                    std::invalid_argument);
    CHECK_THROWS_AS(grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "tiers 13 mpi-"), std::invalid_argument);
  }

  TEST_CASE("a block the kit does not render is named") {
    const auto catalog = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    CHECK_THROWS_WITH_AS(grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "tiers 99"),
                         doctest::Contains("tiers 99"), std::invalid_argument);
    CHECK_THROWS_AS(grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "speeds 01"), std::invalid_argument);
  }

  TEST_CASE("a lab's block carries its records' figures under today's rubric") {
    const auto catalog = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const std::string block = grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "tiers 01");
    // Three rows, one per version, each with its total in bold.
    CHECK(std::count(block.begin(), block.end(), '\n') >= 5);
    CHECK(block.find("| the starter |") != std::string::npos);
    CHECK(block.find("`grading/policy/chapter/01-histogram/`") != std::string::npos);
    CHECK(block.find("| **100** |") != std::string::npos);
  }

  TEST_CASE("a lab's bench block is its saved benchmark output, verbatim in a text block") {
    const auto catalog = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const std::string block = grade::docs::render_block(LABKIT_TEST_SOURCE_ROOT, catalog, "bench 06");
    std::ifstream saved(std::string(LABKIT_TEST_SOURCE_ROOT) + "/docs/benchmarks/06-scan.txt");
    std::string first_line;
    REQUIRE(std::getline(saved, first_line));
    CHECK(block.find("```text\n" + first_line + "\n") != std::string::npos);
    CHECK(block.find("`docs/benchmarks/06-scan.txt`") != std::string::npos);
    CHECK(block.substr(block.size() - 3) == "```");
  }
}
