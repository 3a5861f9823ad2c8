// The calibration cache (labkit/calibration.h): what one run measured is what the next reads,
// and a file written under another key starts over.
#include "labkit/calibration.h"

#include <doctest/doctest.h>

#include <filesystem>

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
}
