// The calibration cache (labkit/calibration.h): what one run measured is what the next reads,
// and a file written under another key starts over; the key's kit fingerprint follows every
// source the reference's times depend on.
#include "labkit/calibration.h"

#include "catalog.h"
#include "compile.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

TEST_SUITE("calibration cache") {
  TEST_CASE("a case's empty-call ceiling is kept for the next run with the same key, at its own place") {
    const fs::path folder = fs::temp_directory_path() / "labkit-test-calibration";
    fs::remove_all(folder);
    {
      labkit::Calibration first(folder.string(), "lab-01", "GPU | driver | kit a");
      CHECK_FALSE(first.empty_call_ceiling_ms("node1 0000:19:00.0", "same-100MiB"));
      first.store_empty_call_ceiling_ms("node1 0000:19:00.0", "same-100MiB", 0.125);
      first.store("same-100MiB", {{"median_ms", 0.5}});
    }
    const labkit::Calibration next(folder.string(), "lab-01", "GPU | driver | kit a");
    REQUIRE(next.empty_call_ceiling_ms("node1 0000:19:00.0", "same-100MiB"));
    CHECK(*next.empty_call_ceiling_ms("node1 0000:19:00.0", "same-100MiB") == doctest::Approx(0.125));
    CHECK_FALSE(next.empty_call_ceiling_ms("node1 0000:19:00.0", "random-1GiB"));
    // Another GPU of the machine, or another machine with the same GPU, measures its own.
    CHECK_FALSE(next.empty_call_ceiling_ms("node1 0000:3B:00.0", "same-100MiB"));
    CHECK_FALSE(next.empty_call_ceiling_ms("node2 0000:19:00.0", "same-100MiB"));
    CHECK(next.reference("same-100MiB"));
  }

  TEST_CASE("a file written under another key keeps no ceiling") {
    const fs::path folder = fs::temp_directory_path() / "labkit-test-calibration-key";
    fs::remove_all(folder);
    labkit::Calibration(folder.string(), "lab-01", "GPU | kit a").store_empty_call_ceiling_ms("node1", "case", 0.2);
    // The file's name hashes the key, so another key reads another file; the key inside is
    // checked too, for a file copied over.
    fs::copy_file(labkit::Calibration(folder.string(), "lab-01", "GPU | kit a").path(),
                  labkit::Calibration(folder.string(), "lab-01", "GPU | kit b").path());
    CHECK_FALSE(labkit::Calibration(folder.string(), "lab-01", "GPU | kit b").empty_call_ceiling_ms("node1", "case"));
  }

  TEST_CASE("an edit anywhere under harness/src starts the cache over") {
    const fs::path root = fs::temp_directory_path() / "labkit-test-fingerprint";
    fs::remove_all(root);
    for (const char* folder : {"harness/src/runner", "harness/include/labkit", "labs/01-x", "solutions/01-x"})
      fs::create_directories(root / folder);
    const auto write = [&](const char* file, const char* text) { std::ofstream(root / file) << text; };
    write("harness/src/runner/timing.cu", "flush here");
    write("labs/01-x/dataset.yaml", "cases: []");
    grade::LabSpec lab;
    lab.dir = "01-x";
    lab.dataset = (root / "labs/01-x/dataset.yaml").string();
    const grade::Toolchain toolchain{root.string(), "", "nvcc", {"-O3"}};
    const std::string before = grade::kit_fingerprint(lab, toolchain);
    write("harness/src/runner/timing.cu", "flush elsewhere");
    CHECK(grade::kit_fingerprint(lab, toolchain) != before);
    fs::remove_all(root);
  }
}
