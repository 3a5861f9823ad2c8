// compute-sanitizer in grading: the command line that wraps the host, and the reading of the
// tool's text output (samples in the format of compute-sanitizer 2025 / CUDA 13, and the older
// "at 0x... in file:line:kernel" form) into findings at the student's lines.
#include "catalog.h"
#include "model.h"
#include "report/console_text.h"
#include "report/html_report.h"
#include "report/markdown_report.h"
#include "sanitize.h"
#include "sanitize_lab.h"

#include <doctest/doctest.h>

#include <algorithm>

using grade::sanitize::parse;

namespace {

const std::vector<std::string> histogram_files = {"histogram.cu"};

bool has(const std::vector<std::string>& argv, const std::string& option, const std::string& value) {
  const auto at = std::find(argv.begin(), argv.end(), option);
  return at != argv.end() && at + 1 != argv.end() && *(at + 1) == value;
}

// racecheck --racecheck-report hazard, on a privatized histogram missing its __syncthreads.
constexpr const char* racecheck_hazards = R"(========= COMPUTE-SANITIZER
========= Error: Potential WAR hazard detected at __shared__ 0x40 in block (3,0,0) :
=========     Read Thread (33,0,0) at (anonymous namespace)::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x3f0 in /build/grade/student/01-histogram/src/histogram.cu:23
=========     Write Thread (0,0,0) at (anonymous namespace)::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x120 in /build/grade/student/01-histogram/src/histogram.cu:17
=========     Current Value : 0, Incoming Value : 0
=========
========= Error: Potential WAR hazard detected at __shared__ 0x44 in block (3,0,0) :
=========     Read Thread (34,0,0) at (anonymous namespace)::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x3f0 in /build/grade/student/01-histogram/src/histogram.cu:23
=========     Write Thread (1,0,0) at (anonymous namespace)::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x120 in /build/grade/student/01-histogram/src/histogram.cu:17
=========     Current Value : 0, Incoming Value : 0
=========
========= Error: Potential RAW hazard detected at __shared__ 0x80 in block (0,0,0) :
=========     Write Thread (5,0,0) at (anonymous namespace)::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x200 in /build/grade/student/01-histogram/src/histogram.cu:20
=========     Read Thread (40,0,0) at (anonymous namespace)::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x3f0 in /build/grade/student/01-histogram/src/histogram.cu:23
=========     Current Value : 3, Incoming Value : 4
=========
========= RACECHECK SUMMARY: 1024 hazards displayed (1024 errors, 0 warnings)
)";

// As compute-sanitizer 2025.3.1 wrote it on an H200 for harness/tests/sanitizer-variants/
// 01-histogram-race (two of its twenty reports): the file as -lineinfo named it, the anonymous
// namespace as <unnamed>, and an empty line with a trailing space.
constexpr const char* racecheck_seen_on_h200 = R"(========= COMPUTE-SANITIZER
========= Error: Potential RAW hazard detected at __shared__ 0x480 in block (8,0,0) :
=========     Write Thread (32,0,0) at <unnamed>::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0xd0 in histogram.cu:13
=========     Read Thread (0,0,0) at <unnamed>::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x5e0 in histogram.cu:22
=========     Current Value : 0
========= 
========= Error: Potential RAW hazard detected at __shared__ 0x481 in block (8,0,0) :
=========     Write Thread (32,0,0) at <unnamed>::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0xd0 in histogram.cu:13
=========     Read Thread (0,0,0) at <unnamed>::histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x5e0 in histogram.cu:22
=========     Current Value : 0
========= 
========= RACECHECK SUMMARY: 20 hazards displayed (709632 errors, 0 warnings)
)";

// racecheck's default analysis report.
constexpr const char* racecheck_analysis = R"(========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x120 in /w/src/histogram.cu:17
=========     and Read access at histogram_shared_kernel(const unsigned char *, unsigned long, unsigned int *)+0x3f0 in /w/src/histogram.cu:23 [2048 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
)";

// memcheck on a tiled sgemm without edge checks (lab 04's tiled_no_edges kind of bug).
constexpr const char* memcheck_out_of_bounds = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at void sgemm_tiled_kernel<32>(int, int, int, float, const float *, const float *, float, float *)+0x2d0 in /build/grade/student/04-matmul/src/sgemm.cu:41
=========     by thread (16,31,0) in block (2,1,0)
=========     Access at 0x7f2a5e200104 is out of bounds
=========     and is 4 bytes after the nearest allocation at 0x7f2a5e200000 of size 256 bytes
=========
========= Invalid __global__ read of size 4 bytes
=========     at void sgemm_tiled_kernel<32>(int, int, int, float, const float *, const float *, float, float *)+0x2d0 in /build/grade/student/04-matmul/src/sgemm.cu:41
=========     by thread (17,31,0) in block (2,1,0)
=========     Access at 0x7f2a5e200108 is out of bounds
=========     and is 8 bytes after the nearest allocation at 0x7f2a5e200000 of size 256 bytes
=========
========= Invalid __global__ read of size 4 bytes
=========     at void sgemm_tiled_kernel<32>(int, int, int, float, const float *, const float *, float, float *)+0x310 in /build/grade/student/04-matmul/src/sgemm.cu:42
=========     by thread (31,16,0) in block (1,2,0)
=========     Access at 0x7f2a5e300040 is out of bounds
=========     and is 64 bytes after the nearest allocation at 0x7f2a5e300000 of size 4096 bytes
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaStreamSynchronize.
=========
========= ERROR SUMMARY: 34 errors
)";

// synccheck on lab 02's starter: __syncthreads after an early return.
constexpr const char* synccheck_divergent = R"(========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in block
=========     at (anonymous namespace)::dot_chapter_kernel(const int *, const int *, unsigned long, long *)+0x1a0 in /build/grade/student/02-dot-product/src/dot.cu:25
=========     by thread (0,0,0) in block (31250,0,0)
=========
========= ERROR SUMMARY: 1 error
)";

constexpr const char* initcheck_uninitialized = R"(========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at scan_kernel(const int *, int *, unsigned long)+0x90 in /w/src/scan.cu:30
=========     by thread (5,0,0) in block (0,0,0)
=========     Address 0x7f0000000014
=========
========= ERROR SUMMARY: 1 error
)";

// cuda-memcheck's and early compute-sanitizer's form: the kernel after the line number.
constexpr const char* memcheck_old_format = R"(========= COMPUTE-SANITIZER
========= Invalid __shared__ write of size 4 bytes
=========     at 0x000000c8 in /w/src/histogram.cu:19:histogram_shared_kernel(unsigned char const *, unsigned long, unsigned int*)
=========     by thread (9,0,0) in block (0,0,0)
=========     Address 0x00000400 is out of bounds
=========
========= ERROR SUMMARY: 1 error
)";

}  // namespace

TEST_SUITE("sanitize") {
  TEST_CASE("racecheck hazards name the hazard, the student's line and the other access") {
    const auto parsed = parse("racecheck", racecheck_hazards, histogram_files);
    REQUIRE(parsed.findings.size() == 2);  // the two WAR reports at one line count once
    CHECK(parsed.findings[0].describe().rfind(
              "racecheck: write-after-read hazard on shared memory at histogram.cu:23 (and histogram.cu:17), "
              "in histogram_shared_kernel",
              0) == 0);
    CHECK(parsed.findings[1].what == "read-after-write hazard on shared memory");
    CHECK(parsed.findings[1].line == 20);
    CHECK(parsed.errors_reported == 1024);
    CHECK(parsed.tool_problem.empty());
  }

  TEST_CASE("racecheck as seen on an H200: one finding, the full count, the kernel's short name") {
    const auto parsed = parse("racecheck", racecheck_seen_on_h200, histogram_files);
    REQUIRE(parsed.findings.size() == 1);
    CHECK(parsed.findings[0].describe() ==
          "racecheck: read-after-write hazard on shared memory at histogram.cu:13 (and histogram.cu:22), "
          "in histogram_shared_kernel");
    CHECK(parsed.errors_reported == 709632);
  }

  TEST_CASE("racecheck analysis reports name both accesses") {
    const auto parsed = parse("racecheck", racecheck_analysis, histogram_files);
    REQUIRE(parsed.findings.size() == 1);
    CHECK(parsed.findings[0].what == "race on shared memory between a write and a read");
    CHECK(parsed.findings[0].file == "histogram.cu");
    CHECK(parsed.findings[0].line == 17);
    CHECK(parsed.findings[0].also_at == "histogram.cu:23");
  }

  TEST_CASE("memcheck out-of-bounds reads: line, kernel, thread, and how far past the buffer") {
    const auto parsed = parse("memcheck", memcheck_out_of_bounds, {"sgemm.cu"});
    REQUIRE(parsed.findings.size() == 2);  // line 41 once, line 42; the API error is a consequence
    CHECK(parsed.findings[0].file == "sgemm.cu");
    CHECK(parsed.findings[0].line == 41);
    CHECK(parsed.findings[0].kernel == "sgemm_tiled_kernel<32>");
    CHECK(parsed.findings[0].thread == "thread (16,31,0) in block (2,1,0)");
    CHECK(parsed.findings[0].what == "Invalid __global__ read of size 4 bytes (4 bytes past the end of a buffer)");
    CHECK(parsed.findings[1].line == 42);
    CHECK(parsed.errors_reported == 34);
  }

  TEST_CASE("the number of findings per tool is capped") {
    CHECK(parse("memcheck", memcheck_out_of_bounds, {"sgemm.cu"}, 1).findings.size() == 1);
  }

  TEST_CASE("synccheck: divergent barrier at the student's line") {
    const auto parsed = parse("synccheck", synccheck_divergent, {"dot.cu"});
    REQUIRE(parsed.findings.size() == 1);
    CHECK(parsed.findings[0].describe() ==
          "synccheck: Barrier error detected. Divergent thread(s) in block at dot.cu:25, in dot_chapter_kernel, "
          "thread (0,0,0) in block (31250,0,0)");
  }

  TEST_CASE("initcheck: uninitialized global read") {
    const auto parsed = parse("initcheck", initcheck_uninitialized, {"scan.cu"});
    REQUIRE(parsed.findings.size() == 1);
    CHECK(parsed.findings[0].what == "Uninitialized __global__ memory read of size 4 bytes");
    CHECK(parsed.findings[0].line == 30);
  }

  TEST_CASE("the older format, with the kernel after the line number") {
    const auto parsed = parse("memcheck", memcheck_old_format, histogram_files);
    REQUIRE(parsed.findings.size() == 1);
    CHECK(parsed.findings[0].line == 19);
    CHECK(parsed.findings[0].kernel == "histogram_shared_kernel");
  }

  TEST_CASE("findings in the kit's files are counted, not shown as the student's") {
    const std::string kit = R"(========= COMPUTE-SANITIZER
========= Invalid __shared__ write of size 4 bytes
=========     at (anonymous namespace)::fill_shared_memory_kernel(unsigned int, unsigned long)+0x50 in /kit/harness/src/host_main.cu:70
=========     by thread (0,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
)";
    const auto parsed = parse("memcheck", kit, histogram_files);
    CHECK(parsed.findings.empty());
    CHECK(parsed.kit_findings == 1);
  }

  TEST_CASE("an API error with no source line is kept only when nothing else was found") {
    const std::string api_only = R"(========= COMPUTE-SANITIZER
========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to cudaMemsetAsync.
=========
========= ERROR SUMMARY: 1 error
)";
    const auto parsed = parse("memcheck", api_only, histogram_files);
    REQUIRE(parsed.findings.size() == 1);
    CHECK(parsed.findings[0].file.empty());
    CHECK(parsed.findings[0].describe().find("cudaErrorInvalidValue") != std::string::npos);
  }

  TEST_CASE("the tool's own failure is a tool problem, not a finding") {
    const std::string crashed = R"(========= COMPUTE-SANITIZER
========= Error: Target application terminated before first instrumented API call
========= Internal Sanitizer Error: The Sanitizer encountered an error while launching the application
)";
    const auto parsed = parse("racecheck", crashed, histogram_files);
    CHECK(parsed.findings.empty());
    CHECK(parsed.tool_problem == "Target application terminated before first instrumented API call");
  }

  TEST_CASE("a clean run and the program's own output give nothing") {
    const auto parsed = parse("memcheck", "host 42 started\n========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n",
                              histogram_files);
    CHECK(parsed.findings.empty());
    CHECK(parsed.errors_reported == 0);
    CHECK(parsed.tool_problem.empty());
  }

  TEST_CASE("the command line: the tool, one log per host start, few reports, no exit-code check") {
    const auto memcheck = grade::sanitize::command("/cuda/bin/compute-sanitizer", "memcheck", "/w/memcheck-{start}.log");
    CHECK(memcheck.front() == "/cuda/bin/compute-sanitizer");
    CHECK(has(memcheck, "--tool", "memcheck"));
    CHECK(has(memcheck, "--log-file", "/w/memcheck-{start}.log"));
    CHECK(has(memcheck, "--check-exit-code", "no"));
    CHECK(has(memcheck, "--print-limit", "20"));
    CHECK(std::find(memcheck.begin(), memcheck.end(), "--racecheck-report") == memcheck.end());
    const auto racecheck = grade::sanitize::command("cs", "racecheck", "r.log");
    CHECK(has(racecheck, "--racecheck-report", "hazard"));
    CHECK(grade::sanitize::slowdown("racecheck") >= grade::sanitize::slowdown("memcheck"));
  }

  TEST_CASE("the labs' sanitize keys: memcheck everywhere, racecheck and synccheck where shared memory is taught") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    for (const grade::LabSpec& lab : labs) {
      CAPTURE(lab.dir);
      CHECK(std::find(lab.sanitize_tools.begin(), lab.sanitize_tools.end(), "memcheck") != lab.sanitize_tools.end());
    }
    const grade::LabSpec& histogram = grade::find_lab(labs, "01");
    CHECK(std::find(histogram.sanitize_tools.begin(), histogram.sanitize_tools.end(), "racecheck") !=
          histogram.sanitize_tools.end());
    const grade::LabSpec& dot = grade::find_lab(labs, "02");
    CHECK(std::find(dot.sanitize_tools.begin(), dot.sanitize_tools.end(), "synccheck") != dot.sanitize_tools.end());
  }

  TEST_CASE("findings travel through the JSON report and show in text and Markdown") {
    grade::LabResult lab{"01", "histogram", "Histogram"};
    grade::SanitizerRun race{"racecheck", {"uniform-257"}};
    race.findings.push_back({"racecheck", "write-after-read hazard on shared memory", "histogram.cu", 23});
    race.errors_reported = 3;
    lab.sanitizer = {race, grade::SanitizerRun{"synccheck", {"uniform-257"}, {}, 0, 0, "it wrote no report"}};
    const grade::LabResult back = grade::lab_from_json(grade::to_json(lab));
    REQUIRE(back.sanitizer.size() == 2);
    CHECK(back.sanitizer[0].findings[0].describe() ==
          "racecheck: write-after-read hazard on shared memory at histogram.cu:23");
    grade::Report report{"student", "student files", {back}};
    const std::string text = grade::to_text(report, true);
    CHECK(text.find("racecheck: write-after-read hazard on shared memory at histogram.cu:23") != std::string::npos);
    CHECK(text.find("racecheck: and 2 more report(s)") != std::string::npos);
    CHECK(text.find("synccheck: the tool itself failed (it wrote no report): not a fault of your code") !=
          std::string::npos);
    CHECK(grade::to_markdown(report, true).find("`racecheck: write-after-read hazard on shared memory at histogram.cu:23`") !=
          std::string::npos);
    const std::string html = grade::to_html(report, {}, true);
    CHECK(html.find("<h3>compute-sanitizer</h3>") != std::string::npos);
    CHECK(html.find("racecheck: write-after-read hazard on shared memory at histogram.cu:23") != std::string::npos);
  }

  TEST_CASE("compute-sanitizer never takes a case that runs in MPI ranks, which it cannot see") {
    auto correctness = [](const std::string& name, grade::Outcome outcome) {
      grade::CaseResult c;
      c.name = name;
      c.kind = "correctness";
      c.outcome = outcome;
      return c;
    };
    labkit::Dataset dataset;
    for (const char* name : {"small", "mpi-seven", "peer"}) dataset.correctness.push_back({name, "correctness"});
    dataset.correctness[1].params["mpi"] = "1";
    grade::LabResult result;
    result.cases = {correctness("small", grade::Outcome::passed), correctness("mpi-seven", grade::Outcome::failed),
                    correctness("peer", grade::Outcome::failed)};
    CHECK(grade::cases_to_sanitize(result, dataset, grade::SanitizeWhen::failures) == std::vector<std::string>{"peer"});
    result.cases[2].outcome = grade::Outcome::passed;
    CHECK(grade::cases_to_sanitize(result, dataset, grade::SanitizeWhen::failures).empty());
    CHECK(grade::cases_to_sanitize(result, dataset, grade::SanitizeWhen::always) ==
          std::vector<std::string>{"small", "peer"});
  }
}
