#include "model.h"
#include "labkit/protocol.h"
#include "report/console_text.h"
#include "report/markdown_report.h"

#include <doctest/doctest.h>

namespace {
grade::Report sample_report() {
  grade::LabResult lab{"01", "histogram", "Histogram"};
  grade::CaseResult pass{"a", "correctness"};
  pass.outcome = grade::Outcome::passed;
  pass.points = pass.max_points = 30;
  grade::CaseResult hidden_fail{"b", "correctness", true};
  hidden_fail.outcome = grade::Outcome::failed;
  hidden_fail.message = "bin 3 expected 4, got 5";
  hidden_fail.max_points = 30;
  grade::CaseResult perf{"p", "performance"};
  perf.max_points = 40;
  perf.message = "no result";
  lab.cases = {pass, hidden_fail, perf};
  grade::add_totals(lab);
  grade::Report report{"alice", "student files", {lab}};
  grade::add_totals(report);
  return report;
}
}  // namespace

namespace {
// A lab whose correctness cases all failed: `same` of them with one hint, the others each their own.
grade::LabResult failing_lab(int same, int own) {
  grade::LabResult lab{"01", "histogram", "Histogram"};
  for (int i = 0; i < same + own; ++i) {
    grade::CaseResult c{"case-" + std::to_string(i), "correctness"};
    c.outcome = grade::Outcome::failed;
    c.max_points = 3;
    c.message = i < same ? "bin 0 expected 6710887, got 0 (hint: is the histogram zeroed?)"
                         : "own hint " + std::to_string(i);
    lab.cases.push_back(c);
  }
  grade::add_totals(lab);
  return lab;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_SUITE("report") {
  TEST_CASE("the JSON report's totals are rounded to a millionth, so shares add up to what the rubric says") {
    grade::LabResult lab{"02", "dot-product", "Dot product"};
    for (int i = 0; i < 27; ++i) {  // 60 points over 27 cases: 2.2222... each, 59.999999999999986 in all
      grade::CaseResult c{"case-" + std::to_string(i), "correctness"};
      c.outcome = grade::Outcome::passed;
      c.points = c.max_points = 60.0 / 27;
      lab.cases.push_back(c);
    }
    grade::add_totals(lab);
    const nlohmann::json json = grade::to_json(lab);
    CHECK(json["points"].get<double>() == 60.0);
    CHECK(json["max_points"].get<double>() == 60.0);
    CHECK(json["cases"][0]["points"].get<double>() == 60.0 / 27);  // exact: totals made again from it agree
  }

  TEST_CASE("a lab not handed in is one line in the Markdown report, not a table of zeros") {
    grade::Report report = sample_report();
    grade::LabResult missing{"02", "dot-product", "Dot product"};
    missing.status = grade::LabStatus::missing_files;
    missing.note = "student files not found (expected: dot.cu): lab not graded";
    for (int i = 0; i < 25; ++i) {
      grade::CaseResult c{"case-" + std::to_string(i), "correctness"};
      c.max_points = 4;
      c.message = "no result: " + missing.note;
      missing.cases.push_back(c);
    }
    grade::add_totals(missing);
    report.labs.push_back(missing);
    grade::add_totals(report);
    const std::string markdown = grade::to_markdown(report, false);
    const std::string lab_02 = markdown.substr(markdown.find("Lab 02"));
    CHECK(lab_02 ==
          "Lab 02 dot-product: Dot product**: missing files, 0 / 100 points: student files not found (expected: "
          "dot.cu): lab not graded\n");
    CHECK(count(markdown, "| case |") == 1);  // lab 01's table only
  }

  TEST_CASE("a hint that many failing cases share is given once") {
    grade::Report report{"alice", "student files", {failing_lab(19, 2)}};
    grade::add_totals(report);
    const std::string markdown = grade::to_markdown(report, false);
    CHECK(count(markdown, "is the histogram zeroed?") == 1);
    CHECK(markdown.find("- The same hint for cases case-0, case-1, case-2, case-3, case-4 and 14 more (19 cases): "
                        "bin 0 expected 6710887, got 0 (hint: is the histogram zeroed?)\n") != std::string::npos);
    CHECK(count(markdown, std::string("| ") + grade::see_shared_hint + " |") == 19);
    CHECK(markdown.find("| own hint 19 |") != std::string::npos);  // a hint of its own stays in its row
    CHECK(markdown.find("| own hint 20 |") != std::string::npos);

    const std::string text = grade::to_text(report, true);
    CHECK(count(text, "is the histogram zeroed?") == 1);
    CHECK(text.find("    FAIL case-0, case-1, case-2, case-3, case-4 and 14 more (19 cases), the same hint: ") !=
          std::string::npos);
    CHECK(text.find("    FAIL case-19: own hint 19\n") != std::string::npos);
  }

  TEST_CASE("numbers in a hint are what differ between cases; digits inside a name are part of it") {
    CHECK(grade::without_numbers("expected -1501, got 1696: the 5 runs gave 2 different answers") ==
          "expected #, got #: the # runs gave # different answers");
    CHECK(grade::without_numbers("2.5e-3 of 2^26; 30 floats past d_out") == "# of #^#; # floats past d_out");
    CHECK(grade::without_numbers("make_float4(0, 0) in f15, a 3x3 filter, row2") ==
          "make_float4(#, #) in f15, a 3x3 filter, row2");
  }

  TEST_CASE("the console gives a hint once for the cases whose hints differ only in their numbers") {
    // As lab 02's racy starter: one race hint with each case's counts, another hint shared
    // word for word, and a hint of its own.
    grade::LabResult lab{"02", "dot-product", "Dot product"};
    auto failing = [&](const std::string& name, const std::string& message) {
      grade::CaseResult c{name, "correctness"};
      c.outcome = grade::Outcome::failed;
      c.max_points = 2;
      c.message = message;
      lab.cases.push_back(c);
    };
    const char* sizes[] = {"1024", "1000003", "33554431", "7777777"};
    for (int i = 0; i < 4; ++i)
      failing(std::string("random-") + sizes[i], "expected " + std::to_string(-1501 * (i + 1)) + ", got " +
                                                   std::to_string(56084 + i) + ": the 5 runs gave " +
                                                   std::to_string(i + 2) + " different answers: a race");
    for (int i = 0; i < 3; ++i) failing("ties-" + std::to_string(i), "ties are a race as well");
    failing("own", "threads past n add garbage");
    grade::CaseResult passed{"random-1", "correctness"};
    passed.outcome = grade::Outcome::passed;
    lab.cases.push_back(passed);
    grade::add_totals(lab);
    grade::Report report{"starter", "student files", {lab}};
    grade::add_totals(report);

    const auto grouped = grade::shared_hints(lab, true, grade::HintMatch::same_but_numbers);
    REQUIRE(grouped.size() == 2);
    CHECK(grouped[0].numbers_differ);
    CHECK(grade::case_list(grouped[0]) == "random-1024, random-1000003, random-33554431, random-7777777 (4 cases)");
    CHECK(grouped[0].hint == "expected -1501, got 56084: the 5 runs gave 2 different answers: a race");
    CHECK_FALSE(grouped[1].numbers_differ);
    CHECK(grouped[1].cases.size() == 3);
    CHECK(grade::shared_hints(lab, true).size() == 1);  // word for word: the ties only

    const std::string text = grade::to_text(report, true);
    CHECK(count(text, "different answers: a race") == 1);
    CHECK(text.find("    FAIL random-1024, random-1000003, random-33554431, random-7777777 (4 cases), the same hint "
                    "but for its numbers (each case's are in the reports), as random-1024 gave it: expected -1501, "
                    "got 56084: the 5 runs gave 2 different answers: a race\n") != std::string::npos);
    CHECK(count(text, "ties are a race as well") == 1);
    CHECK(text.find("    FAIL ties-0, ties-1, ties-2 (3 cases), the same hint: ties are a race as well\n") !=
          std::string::npos);
    CHECK(text.find("    FAIL own: threads past n add garbage\n") != std::string::npos);
    CHECK(text.find("random-1:") == std::string::npos);  // a passed case is not listed

    // The Markdown report keeps each case's numbers in its row.
    const std::string markdown = grade::to_markdown(report, true);
    CHECK(count(markdown, "different answers: a race") == 4);
  }

  TEST_CASE("the values a comparison lists are each case's own: hints that differ there are merged too") {
    grade::LabResult lab{"08", "nbody", "N-body"};
    const char* details[] = {"3 of 3 values differ: body 0, x expected 0, got 104349",
                             "6 of 6 values differ: body 0, x expected 0.09, got 112440; body 1, y expected 0.4, "
                             "got -31094.1; ...",
                             "4684 of 24573 values differ: body 5, z expected 141124, got 141468"};
    for (int i = 0; i < 4; ++i) {  // the last: no value was wrong, the checks saw writes out of bounds
      grade::CaseResult c{"ragged-" + std::to_string(i), "correctness"};
      c.outcome = grade::Outcome::failed;
      c.message = "n = " + std::to_string(i + 1) + " is not a multiple of the tile size 256" +
                  (i < 3 ? std::string(". ") + details[i] : std::string());
      lab.cases.push_back(c);
    }
    const auto grouped = grade::shared_hints(lab, true, grade::HintMatch::same_but_numbers);
    REQUIRE(grouped.size() == 1);
    CHECK(grouped[0].cases.size() == 4);
    CHECK(grouped[0].numbers_differ);
  }

  TEST_CASE("two cases with one hint are listed each with it; a short list of cases is named in full") {
    const grade::LabResult two = failing_lab(2, 1);
    CHECK(grade::shared_hints(two, true).empty());
    const auto shared = grade::shared_hints(failing_lab(3, 0), true);
    REQUIRE(shared.size() == 1);
    CHECK(grade::case_list(shared[0]) == "case-0, case-1, case-2 (3 cases)");
  }

  TEST_CASE("hidden cases' hints are grouped as the student sees them: withheld") {
    grade::LabResult lab = failing_lab(0, 4);
    for (grade::CaseResult& c : lab.cases) c.hidden = true;
    const auto for_student = grade::shared_hints(lab, false);
    REQUIRE(for_student.size() == 1);
    CHECK(for_student[0].hint == "hidden case: details are withheld");
    CHECK(grade::shared_hints(lab, true).empty());  // the instructor sees four different hints
  }

  TEST_CASE("why a lab was not graded: its note, or its status where the note points elsewhere") {
    grade::LabResult lab = sample_report().labs[0];
    CHECK(grade::not_graded_reason(lab).empty());
    lab.status = grade::LabStatus::missing_files;
    lab.note = "histogram.cu is 3.2 MiB; student files are limited to 1 MiB";
    CHECK(grade::not_graded_reason(lab) == lab.note);
    lab.status = grade::LabStatus::build_failed;
    lab.note = "your files did not compile; the compiler's messages are below";
    CHECK(grade::not_graded_reason(lab) == "build failed");
  }

  TEST_CASE("the library's time is in the timing line when the runner's record has one") {
    grade::CaseResult timed{"uniform-1GiB", "performance"};
    timed.outcome = grade::Outcome::passed;
    timed.timing = {{"student", {{"median_ms", 0.5}, {"gbps", 2000.0}, {"percent_of_peak", 66.0}}},
                    {"reference", {{"median_ms", 0.4}}},
                    {"ratio", 0.8}};
    CHECK(grade::timing_line(timed) == "yours 0.5000 ms, 2000 GB/s, 66.0% of peak; reference 0.4000 ms; ratio 0.80");
    CHECK_FALSE(grade::library_time(timed));
    timed.timing["anchor"] = {{"name", "CUB"}, {"median_ms", 0.45}};
    CHECK(grade::timing_line(timed) ==
          "yours 0.5000 ms, 2000 GB/s, 66.0% of peak; reference 0.4000 ms; CUB 0.4500 ms; ratio 0.80");
    timed.timing["anchor"] = {{"name", "CUB"}, {"median_ms", "fast"}};  // not a time: no library figure
    CHECK_FALSE(grade::library_time(timed));
    timed.timing["anchor"] = {{"name", "cuBLAS"}, {"median_ms", 0.0}};
    CHECK_FALSE(grade::library_time(timed));
  }

  TEST_CASE("a compute-bound case's timing line shows TFLOP/s and the FP32 peak, not the bandwidth") {
    grade::CaseResult timed{"square-4096", "performance"};
    timed.outcome = grade::Outcome::passed;
    // 2 * 4096^3 FLOP in 2.5 ms: 55.0 TFLOP/s, 82.1% of a 67 TFLOP/s peak.
    timed.timing = {{"flops", 2.0 * 4096.0 * 4096.0 * 4096.0},
                    {"peak_fp32_gflops", 67000.0},
                    {"student", {{"median_ms", 2.5}, {"gbps", 8.0}, {"percent_of_peak", 0.2}}},
                    {"reference", {{"median_ms", 2.25}}},
                    {"ratio", 0.9}};
    CHECK(grade::timing_line(timed) ==
          "yours 2.5000 ms, 55.0 TFLOP/s, 82.1% of FP32 peak; reference 2.2500 ms; ratio 0.90");
    // A lab that counts its work as its README does: the line shows that count, the floor keeps its own.
    timed.timing["flops_shown"] = 1.2 * timed.timing["flops"].get<double>();
    CHECK(grade::timing_line(timed) ==
          "yours 2.5000 ms, 66.0 TFLOP/s, 98.5% of FP32 peak; reference 2.2500 ms; ratio 0.90");
  }

  TEST_CASE("a tensor-core case's timing line and floor use the BF16 tensor-core peak, not the FP32 one") {
    grade::CaseResult timed{"bf16-4096", "performance"};
    timed.outcome = grade::Outcome::passed;
    // 2 * 4096^3 FLOP in 0.2 ms: 687.2 TFLOP/s, 64.2% of a 1070 TFLOP/s peak.
    timed.timing = {{"flops", 2.0 * 4096.0 * 4096.0 * 4096.0},
                    {"peak_bf16_tensor_gflops", 1070000.0},
                    {"student", {{"median_ms", 0.2}, {"gbps", 600.0}, {"percent_of_peak", 20.0}}},
                    {"reference", {{"median_ms", 0.2}}},
                    {"ratio", 1.0}};
    CHECK(grade::timing_line(timed) ==
          "yours 0.2000 ms, 687.2 TFLOP/s, 64.2% of BF16 tensor-core peak; reference 0.2000 ms; ratio 1.00");
    CHECK(labkit::protocol::compute_peak(timed.timing).gflops == 1070000.0);
  }

  TEST_CASE("totals add up per lab and overall") {
    const auto report = sample_report();
    CHECK(report.labs[0].points == 30);
    CHECK(report.labs[0].max_points == 100);
    CHECK(report.points == 30);
    CHECK(report.max_points == 100);
  }

  TEST_CASE("JSON has the shape the exports read") {
    const auto json = grade::to_json(sample_report());
    CHECK(json["who"] == "alice");
    CHECK(json["points"] == 30);
    REQUIRE(json["labs"].size() == 1);
    const auto& lab = json["labs"][0];
    for (const char* key : {"id", "name", "title", "status", "note", "points", "max_points", "cases", "build_log"})
      CHECK_MESSAGE(lab.contains(key), key);
    CHECK(lab["status"] == "graded");
    for (const char* key : {"name", "kind", "hidden", "ran", "passed", "outcome", "message", "points", "max_points"})
      CHECK_MESSAGE(lab["cases"][0].contains(key), key);
    CHECK(lab["cases"][0]["outcome"] == "passed");
    CHECK(lab["cases"][1]["outcome"] == "failed");
    CHECK(lab["cases"][2]["outcome"] == "not run");
  }

  TEST_CASE("a case's outcome survives saving, and results saved without one are read by ran and passed") {
    const grade::LabResult back = grade::lab_from_json(grade::to_json(sample_report().labs[0]));
    CHECK(back.cases[0].outcome == grade::Outcome::passed);
    CHECK(back.cases[1].outcome == grade::Outcome::failed);
    CHECK(back.cases[2].outcome == grade::Outcome::not_run);
    nlohmann::json old = grade::to_json(sample_report().labs[0]);
    for (auto& c : old["cases"]) c.erase("outcome");
    const grade::LabResult old_back = grade::lab_from_json(old);
    CHECK(old_back.cases[0].outcome == grade::Outcome::passed);
    CHECK(old_back.cases[1].outcome == grade::Outcome::failed);
    CHECK(old_back.cases[2].outcome == grade::Outcome::not_run);
  }

  TEST_CASE("a case that could not run is shown as not run, never as a failure") {
    grade::Report report = sample_report();
    grade::CaseResult no_mpi{"mpi-1", "correctness"};
    no_mpi.outcome = grade::Outcome::not_run;
    no_mpi.message = "not run: needs MPI (mpirun is not on PATH)";
    report.labs[0].cases.push_back(no_mpi);
    CHECK(grade::to_text(report, true).find("NOT RUN mpi-1") != std::string::npos);
    CHECK(grade::to_text(report, true).find("FAIL mpi-1") == std::string::npos);
    CHECK(grade::to_markdown(report, true).find("| mpi-1 | correctness | not run |") != std::string::npos);
  }

  TEST_CASE("a hidden case's details are withheld from students but not instructors") {
    const auto report = sample_report();
    CHECK(grade::to_text(report, false).find("bin 3 expected") == std::string::npos);
    CHECK(grade::to_text(report, false).find("hidden case") != std::string::npos);
    CHECK(grade::to_text(report, true).find("bin 3 expected") != std::string::npos);
    CHECK(grade::to_markdown(report, false).find("| b (hidden) | correctness | fail |") != std::string::npos);
  }
}
