// The files a batch writes for the instructor, the students and the course platforms, from
// synthetic results: no GPU, no compiler.
#include "bad_input.h"
#include "catalog.h"
#include "intake.h"
#include "model.h"
#include "report/canvas_csv.h"
#include "report/console_text.h"
#include "report/file_names.h"
#include "report/gradebook_csv.h"
#include "report/gradescope.h"
#include "report/junit_xml.h"
#include "report/markdown_report.h"
#include "report/prairielearn.h"
#include "report/report_writer.h"
#include "roster.h"
#include "unicode.h"

#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

grade::LabSpec spec(const std::string& id, const std::string& name, double correctness, double performance) {
  grade::LabSpec lab;
  lab.dir = id + "-" + name;
  lab.id = id;
  lab.name = name;
  lab.title = "The " + name + " lab";
  lab.student_files = {name + ".cu"};
  lab.correctness_points = correctness;
  if (performance > 0) lab.performance = {{"timed", performance, 0.5, 0.9}};
  return lab;
}

// A lab graded as its spec says: `passed` of its `cases` correctness cases pass, and one timed case.
grade::LabResult graded(const grade::LabSpec& lab, int cases, int passed, double timed_points = 0) {
  grade::LabResult result{lab.id, lab.name, lab.title};
  for (int i = 0; i < cases; ++i) {
    grade::CaseResult c{"case-" + std::to_string(i), "correctness"};
    c.outcome = i < passed ? grade::Outcome::passed : grade::Outcome::failed;
    c.max_points = lab.correctness_points / cases;
    c.points = i < passed ? c.max_points : 0;
    if (i >= passed) c.message = "bin 3 expected 4, got 5";
    result.cases.push_back(c);
  }
  if (!lab.performance.empty()) {
    grade::CaseResult c{"timed", "performance"};
    c.outcome = grade::Outcome::passed;
    c.max_points = lab.performance[0].points;
    c.points = timed_points;
    result.cases.push_back(c);
  }
  grade::add_totals(result);
  return result;
}

// A lab nothing of which ran: not handed in, refused, not compiled, or no GPU here.
grade::LabResult unrun(const grade::LabSpec& lab, grade::LabStatus status, const std::string& note, int cases = 3) {
  grade::LabResult result = graded(lab, cases, 0);
  result.status = status;
  result.note = note;
  for (grade::CaseResult& c : result.cases) {
    c.outcome = grade::Outcome::not_run;
    c.points = 0;
    c.message = "no result: " + note;
  }
  grade::add_totals(result);
  return result;
}

grade::Report report_of(const std::string& who, std::vector<grade::LabResult> labs) {
  grade::Report report{who, "student files", std::move(labs)};
  grade::add_totals(report);
  return report;
}

const grade::LabSpec histogram = spec("01", "histogram", 60, 40);
const grade::LabSpec dot = spec("02", "dot", 60, 40);
const grade::LabSpec scan = spec("06", "scan", 100, 0);

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read(const fs::path& file) {
  std::ostringstream text;
  text << std::ifstream(file).rdbuf();
  return text.str();
}

}  // namespace

TEST_SUITE("exports") {
  TEST_CASE("every export holds only the labs asked for") {
    const grade::Report alice = report_of("alice", {graded(histogram, 4, 4, 40), graded(dot, 4, 2, 10)});
    const std::vector<grade::LabSpec> asked = {dot};

    const json gradescope = *grade::gradescope_results(alice, dot);
    REQUIRE(gradescope["tests"].size() == 5);
    CHECK(gradescope["score"] == 40.0);  // lab 02's 30 + 10, not lab 01's 100

    const std::string junit = grade::junit_xml({alice}, asked);
    CHECK(junit.find("lab 01") == std::string::npos);
    CHECK(count(junit, "<testsuite ") == 1);

    const std::string gradebook = grade::gradebook_csv({alice}, asked);
    CHECK(gradebook == "student,lab02-dot,total,max,secret,notes\nalice,40,40,100,no,\n");
    CHECK(grade::prairielearn_results(alice, dot)["tests"].size() == 5);
    CHECK(grade::gradescope_scores_csv({alice}, dot, {}) == "Name,SID,Email,Total Score\nalice,,,40\n");
  }

  TEST_CASE("the platforms' files are per lab: a lab's score is that lab's, over that lab's maximum") {
    // The README's main command grades every lab; a student hands in lab 01 only.
    std::vector<grade::LabSpec> labs = {histogram};
    std::vector<grade::LabResult> results = {graded(histogram, 4, 3, 28.4)};  // 45 + 28.4 = 73.4
    for (const char* id : {"02", "03", "04"}) {
      labs.push_back(spec(id, "lab" + std::string(id), 100, 0));
      results.push_back(unrun(labs.back(), grade::LabStatus::missing_files, grade::not_found_note(labs.back())));
    }
    const grade::Report report = report_of("alice", results);

    const json prairielearn = grade::prairielearn_results(report, histogram);
    CHECK(prairielearn["score"].get<double>() == doctest::Approx(0.734));
    CHECK(prairielearn["message"] == "73.4 / 100 points");
    const json gradescope = *grade::gradescope_results(report, histogram);
    double max_score = 0;
    for (const json& test : gradescope["tests"]) max_score += test["max_score"].get<double>();
    CHECK(max_score == doctest::Approx(100));
    CHECK(gradescope["score"] == 73.4);
    CHECK(gradescope["output"].get<std::string>().find("lab0") == std::string::npos);  // no other lab's note

    const fs::path out = fs::temp_directory_path() / "labkit-test-exports-per-lab";
    fs::remove_all(out);
    grade::write_batch_outputs({report}, labs, out.string());
    CHECK(fs::exists(out / "prairielearn" / "01-histogram" / "alice" / "results.json"));
    CHECK(fs::exists(out / "gradescope" / "01-histogram" / "alice" / "results.json"));
    CHECK(fs::exists(out / "gradescope-scores" / "01-histogram.csv"));
    CHECK_FALSE(fs::exists(out / "prairielearn" / "alice"));  // no file spanning the labs
    // A lab not handed in is one line of the handout, not a card of its own.
    const std::string handout = read(out / "handout" / "alice.html");
    CHECK(count(handout, "<section class=\"lab\"") == 1);
    CHECK(handout.find("Not handed in: labs 02-04 (0 of 300 points).") != std::string::npos);
    fs::remove_all(out);
  }

  TEST_CASE("a lab not judged here is never a 0: no score in any file, and no total") {
    const grade::LabResult no_gpu = unrun(dot, grade::LabStatus::not_run, "not run: no CUDA GPU found here");
    const std::vector<grade::Report> reports = {
        report_of("alice", {graded(histogram, 4, 4, 40), no_gpu}),
        report_of("bob", {unrun(histogram, grade::LabStatus::missing_files, grade::not_found_note(histogram)), no_gpu})};
    const std::vector<grade::LabSpec> labs = {histogram, dot};

    const auto gradebook = grade::parse_csv(grade::gradebook_csv(reports, labs));
    CHECK(gradebook[1] == std::vector<std::string>{"alice", "100", "", "", "200", "no",
                                                   "02: not run: no CUDA GPU found here"});
    CHECK(gradebook[2] == std::vector<std::string>{"bob", "0", "", "", "200", "no",
                                                   "01: not handed in; 02: not run: no CUDA GPU found here"});
    const auto canvas = grade::parse_csv(grade::canvas_csv(reports, labs, {}));
    CHECK(canvas[2] == std::vector<std::string>{"alice", "", "", "", "", "100", ""});
    CHECK(grade::parse_csv(grade::gradescope_scores_csv(reports, dot, {}))[1] ==
          std::vector<std::string>{"alice", "", "", ""});

    // Gradescope cannot say "not graded": no file, so that the autograder gives no score.
    CHECK_FALSE(grade::gradescope_results(reports[0], dot).has_value());
    CHECK(grade::prairielearn_results(reports[0], dot)["gradable"] == false);
    CHECK_FALSE(grade::prairielearn_results(reports[0], dot).contains("score"));
    // A lab not handed in was judged: 0 in every file, gradable.
    CHECK(grade::prairielearn_results(reports[1], histogram)["gradable"] == true);
    CHECK(grade::prairielearn_results(reports[1], histogram)["score"] == 0.0);
    CHECK(grade::gradescope_results(reports[1], histogram).has_value());

    const std::string console = grade::batch_summary(reports, labs);
    CHECK(console.find("alice              - / 200\n") == 0);
    const std::string markdown = grade::to_markdown(reports[0], false);
    CHECK(markdown.find("not judged here (100 points)") != std::string::npos);
    CHECK(markdown.find("Total: **not known: 1 lab not judged here (200 points in all)**") != std::string::npos);
    CHECK(grade::to_json(reports[0])["points"].is_null());
    CHECK(grade::to_json(reports[0])["labs"][1]["points"].is_null());
    CHECK(grade::to_json(reports[0])["labs"][0]["points"] == 100.0);
  }

  TEST_CASE("every file gives a lab the same figure, to the hundredth, that its cases add up to") {
    // 60 points over 7 cases and 40 over 3 timed ones: sevenths and thirds, rounded. A timed
    // case earns 18.958 of its 40/3, and 5 of 7 correctness cases pass.
    const grade::LabSpec lab = spec("01", "histogram", 60, 0);
    grade::LabResult result = graded(lab, 7, 5);
    for (int i = 0; i < 3; ++i) {
      grade::CaseResult c{"t" + std::to_string(i), "performance"};
      c.outcome = grade::Outcome::passed;
      c.max_points = 40.0 / 3;
      c.points = i == 0 ? 40.0 / 3 : i == 1 ? 5.6247 : 0;
      result.cases.push_back(c);
    }
    grade::add_totals(result);
    const grade::Report report = report_of("alice", {result});
    const double figure = grade::lab_points(report.labs[0]);

    long long max_hundredths = 0, score_hundredths = 0;
    const json gradescope = *grade::gradescope_results(report, lab);
    for (const json& test : gradescope["tests"]) {
      const double max = test["max_score"], score = test["score"];
      CHECK(max * 100 == doctest::Approx(double(std::llround(max * 100))));  // two decimals
      max_hundredths += std::llround(max * 100);
      score_hundredths += std::llround(score * 100);
      if (test["status"] == "passed" && test["name"].get<std::string>().rfind("correctness", 0) == 0)
        CHECK(score == max);
    }
    CHECK(max_hundredths == 10000);
    CHECK(score_hundredths == std::llround(figure * 100));
    CHECK(gradescope["score"] == figure);

    const std::string text = grade::points_figure(figure);
    const json prairielearn = grade::prairielearn_results(report, lab);
    CHECK(prairielearn["score"].get<double>() * 100 == doctest::Approx(figure).epsilon(1e-12));
    CHECK(prairielearn["message"] == text + " / 100 points");
    double tests = 0;
    for (const json& test : prairielearn["tests"]) tests += test["points"].get<double>();
    CHECK(grade::points_figure(tests) == text);
    CHECK(grade::parse_csv(grade::gradebook_csv({report}, {lab}))[1][1] == text);
    CHECK(grade::parse_csv(grade::canvas_csv({report}, {lab}, {}))[2][5] == text);
    CHECK(grade::parse_csv(grade::gradescope_scores_csv({report}, lab, {}))[1][3] == text);
    CHECK(grade::to_markdown(report, false).find("Points: " + text + " / 100 points.") != std::string::npos);
    CHECK(grade::to_json(report)["labs"][0]["points"] == figure);
    CHECK(text.find('.') != std::string::npos);
    CHECK(text.size() - text.find('.') <= 3);  // to the hundredth
  }

  TEST_CASE("points figures: to the hundredth, without trailing zeros") {
    CHECK(grade::points_figure(15) == "15");
    CHECK(grade::points_figure(73.4) == "73.4");
    CHECK(grade::points_figure(18.958) == "18.96");
    CHECK(grade::points_figure(59.999999999999986) == "60");
    CHECK(grade::points_figure(0) == "0");
    CHECK(grade::points_figure(-0.001) == "0");
  }

  TEST_CASE("Gradescope's maxima add up to the total exactly, and full marks are the whole maximum") {
    // 60 points over 7 cases and 40 over 3 timed ones: thirds and sevenths, rounded.
    const grade::LabSpec lab = spec("01", "histogram", 60, 0);
    grade::LabResult result = graded(lab, 7, 7);
    for (int i = 0; i < 3; ++i) {
      grade::CaseResult c{"t" + std::to_string(i), "performance"};
      c.outcome = grade::Outcome::passed;
      c.max_points = c.points = 40.0 / 3;
      result.cases.push_back(c);
    }
    grade::add_totals(result);
    const grade::Report report = report_of("alice", {result, graded(scan, 3, 1)});

    const json full = *grade::gradescope_results(report, lab);
    for (const json& test : full["tests"]) CHECK(test["score"] == test["max_score"]);
    CHECK(full["score"] == 100.0);
    const json third = *grade::gradescope_results(report, scan);
    long long max_hundredths = 0;
    for (const json& test : third["tests"]) max_hundredths += std::llround(test["max_score"].get<double>() * 100);
    CHECK(max_hundredths == 10000);
    CHECK(third["score"] == 33.34);  // the first case of three took the hundredth left over
  }

  TEST_CASE("a correctness and a timed case of one name are two tests of two names") {
    grade::LabResult result = graded(histogram, 2, 2, 5.3);
    result.cases[0].name = result.cases.back().name = "uniform-100MiB";
    const grade::Report report = report_of("alice", {result});
    for (const json& tests : {(*grade::gradescope_results(report, histogram))["tests"],
                              grade::prairielearn_results(report, histogram)["tests"]}) {
      std::set<std::string> names;
      for (const json& test : tests) names.insert(test["name"].get<std::string>());
      CHECK(names.size() == tests.size());
      CHECK(names.count("correctness: uniform-100MiB") == 1);
      CHECK(names.count("performance: uniform-100MiB") == 1);
    }
  }

  TEST_CASE("Gradescope's output gives the lab's note and the compiler's messages, cut, as valid UTF-8") {
    grade::LabResult broken = unrun(histogram, grade::LabStatus::build_failed,
                                    "your files did not compile; the compiler's messages are below");
    broken.build_log = "histogram.cu(3): error: expected a \";\"\n";
    for (int i = 0; i < 5000; ++i) broken.build_log += "\xc3\xa9";  // é, 10000 bytes with no line end
    const json results = *grade::gradescope_results(report_of("José", {broken}), histogram);
    const std::string output = results["output"];
    CHECK(output.find("Lab 01 histogram: 0 / 100 points; your files did not compile") == 0);
    CHECK(output.find("histogram.cu(3): error: expected a \";\"") != std::string::npos);
    CHECK(output.size() < 9000);
    CHECK(output.find("more bytes of the compiler's messages") != std::string::npos);
    CHECK_NOTHROW(results.dump());  // throws on invalid UTF-8: the cut fell between characters
    for (const json& test : results["tests"]) CHECK_FALSE(test.contains("status"));  // neither passed nor failed
  }

  TEST_CASE("JUnit: a case that did not run is skipped with its reason; a lab not graded fails once") {
    grade::LabResult broken = unrun(histogram, grade::LabStatus::build_failed,
                                    "your files did not compile; the compiler's messages are below");
    broken.build_log = "histogram.cu(3): error: expected a \";\"\n";
    const grade::Report report =
        report_of("bob", {broken, unrun(dot, grade::LabStatus::not_run, "not run: no CUDA GPU found here"),
                          graded(scan, 3, 2)});
    const std::string junit = grade::junit_xml({report}, {histogram, dot, scan});
    // Lab 01: the lab fails once (build failed), with the compiler's messages; its 4 cases are skipped.
    CHECK(junit.find("tests=\"5\" failures=\"1\" skipped=\"4\"") != std::string::npos);
    CHECK(junit.find("name=\"lab graded\"><failure message=\"build failed\">histogram.cu(3): error: expected a "
                     "&quot;;&quot;\n</failure>") != std::string::npos);
    CHECK(junit.find("<skipped message=\"the lab was not graded: build failed\"/>") != std::string::npos);
    CHECK(junit.find("messages are below") == std::string::npos);  // nothing is below
    // Lab 02: nothing could be judged here: all skipped, no failure.
    CHECK(junit.find("tests=\"5\" failures=\"0\" skipped=\"5\"") != std::string::npos);
    // Lab 06: graded, one case failed.
    CHECK(junit.find("tests=\"4\" failures=\"1\" skipped=\"0\"") != std::string::npos);
    CHECK(count(junit, "<failure") == 2);
  }

  TEST_CASE("the gradebook and the console give the real reason a lab was not graded") {
    const std::string link = "scan.cu is a symbolic link; hand in the file itself (lab not graded)";
    const std::string file = "this submission is a file, not a folder: unpack \"carol.zip\" into a folder named "
                             "\"carol\" in its place (lab not graded)";
    const std::vector<grade::Report> reports = {
        report_of("alice", {graded(histogram, 4, 4), unrun(dot, grade::LabStatus::missing_files, grade::not_found_note(dot)),
                            unrun(scan, grade::LabStatus::missing_files, link)}),
        report_of("bob", {unrun(histogram, grade::LabStatus::build_failed,
                                "your files did not compile; the compiler's messages are below"),
                          graded(dot, 4, 4), graded(scan, 3, 3)}),
        report_of("carol.zip", {unrun(histogram, grade::LabStatus::missing_files, file),
                                unrun(dot, grade::LabStatus::missing_files, file),
                                unrun(scan, grade::LabStatus::missing_files, file)})};
    const std::vector<grade::LabSpec> labs = {histogram, dot, scan};
    const std::string gradebook = grade::gradebook_csv(reports, labs);
    CHECK(gradebook.find(",02: not handed in; 06: " + link + "\n") != std::string::npos);
    CHECK(gradebook.find(",01: build failed\n") != std::string::npos);
    // One reason for all three labs: said once.
    CHECK(gradebook.find("\"01, 02, 06: this submission is a file, not a folder: unpack \"\"carol.zip\"\"") !=
          std::string::npos);

    const std::string console = grade::batch_summary(reports, labs);
    CHECK(console.find("    lab 02: not handed in\n    lab 06: " + link + "\n") != std::string::npos);
    CHECK(console.find("    lab 01: build failed\n") != std::string::npos);
    CHECK(console.find("    labs 01, 02, 06: this submission is a file, not a folder") != std::string::npos);
    CHECK(console.find("missing files") == std::string::npos);  // the status alone says too little
  }

  TEST_CASE("labs in a row with one reason read as a range") {
    std::vector<grade::LabSpec> labs;
    std::vector<grade::LabResult> results;
    for (const char* id : {"01", "02", "03", "04", "06", "07", "09"}) {
      labs.push_back(spec(id, "lab" + std::string(id), 100, 0));
      results.push_back(unrun(labs.back(), grade::LabStatus::missing_files, grade::not_found_note(labs.back())));
    }
    CHECK(grade::batch_summary({report_of("dave", results)}, labs).find("    labs 01-04, 06, 07, 09: not handed in\n") !=
          std::string::npos);
  }

  TEST_CASE("report file names are safe and unique; a plain-ASCII folder keeps its own; the gradebook keeps the folders' names") {
    std::vector<grade::Report> reports;
    for (const std::string who : {"dave smith", "Dave-Smith", "José Núñez", "Jose\xcc\x81 Nun\xcc\x83" "ez", "李雷",
                                  "..hidden", "alice", "ALICE", "a/b", "Jos\xe9 (Latin-1)", "Łukasz Żółć", "Dvořák",
                                  "bo b", "bo-b-2", "bo-b"})
      reports.push_back(report_of(who, {graded(scan, 3, 3)}));
    const std::vector<std::string> names = grade::report_file_names(reports);
    const std::vector<std::string> expected = {"dave-smith-2", "Dave-Smith", "Jose-Nunez",  "Jose-Nunez-2", "student",
                                               "hidden",       "alice",      "ALICE-2",     "a-b",          "Jos-Latin-1",
                                               "Lukasz-Zolc",  "Dvorak",     "bo-b-3",      "bo-b-2",       "bo-b"};
    CHECK(names == expected);
    for (const std::string& name : names)
      for (char c : name) CHECK_MESSAGE((std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'), name);
    CHECK(grade::gradebook_csv(reports, {scan}).find("\ndave smith,100,") != std::string::npos);
  }

  TEST_CASE("the console's columns align whatever the names' bytes") {
    // Each name with the columns a terminal gives it: accents none, CJK ideographs two.
    const std::vector<std::pair<std::string, std::size_t>> names = {
        {"alice", 5}, {"José Núñez", 10}, {"李雷", 4}, {"Jose\xcc\x81", 4}};
    std::vector<grade::Report> reports;
    for (const auto& [name, width] : names) reports.push_back(report_of(name, {graded(scan, 3, 1)}));
    const auto lines = lines_of(grade::batch_summary(reports, {scan}));
    REQUIRE(lines.size() == names.size());
    std::set<std::size_t> columns_before_slash;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      REQUIRE(lines[i].rfind(names[i].first, 0) == 0);
      columns_before_slash.insert(names[i].second + lines[i].find('/') - names[i].first.size());
    }
    CHECK(columns_before_slash.size() == 1);
  }

  TEST_CASE("a roster: columns by name, a spreadsheet's BOM and CRLF, quoted fields") {
    const grade::Roster roster = grade::parse_roster(
        "\xEF\xBB\xBF" "email,folder,name,student_id,section\r\n"
        "dave@uni.edu,dave smith,\"Smith, Dave\",1001,A\r\n"
        "\r\n"
        "jose@uni.edu,José Núñez,José Núñez,1002,B\r\n",
        "roster.csv");
    REQUIRE(roster.size() == 2);
    const grade::Student dave = grade::student_of(roster, "dave smith");
    CHECK(dave.student_id == "1001");
    CHECK(dave.name == "Smith, Dave");
    CHECK(dave.email == "dave@uni.edu");
    CHECK(grade::student_of(roster, "nobody").name.empty());
    CHECK(grade::folders_missing_from(roster, {"dave smith", "nobody"}) == std::vector<std::string>{"nobody"});

    CHECK_THROWS_WITH_AS(grade::parse_roster("student_id,name\n1,a\n", "r.csv"),
                         "the roster r.csv has no `folder` column: its first row must name the columns, e.g. "
                         "folder,student_id,name,email",
                         grade::BadInput);
    CHECK_THROWS_WITH_AS(grade::parse_roster("folder,name\nbob,B\nbob,C\n", "r.csv"),
                         "the roster r.csv, row 3: the folder bob is listed twice", grade::BadInput);
    CHECK_THROWS_AS(grade::read_roster("/nonexistent/roster.csv"), grade::BadInput);
  }

  TEST_CASE("a folder matches its roster row whichever way its accents were written") {
    const std::string precomposed = "Jos\xc3\xa9 N\xc3\xba\xc3\xb1" "ez";              // as a spreadsheet writes it
    const std::string decomposed = "Jose\xcc\x81 Nu\xcc\x81n\xcc\x83" "ez";             // as a macOS zip does
    CHECK(grade::composed(decomposed) == precomposed);
    CHECK(grade::composed("Nguye\xcc\x82\xcc\x83n") == "Nguy\xe1\xbb\x85n");   // e, circumflex, tilde: one letter
    CHECK(grade::composed("Jos\xe9 (Latin-1)") == "Jos\xe9 (Latin-1)");            // bytes that are no UTF-8 stay
    const grade::Roster roster =
        grade::parse_roster("folder,student_id,name\n" + precomposed + ",1002,\n", "roster.csv");
    CHECK(grade::student_of(roster, decomposed).student_id == "1002");
    CHECK(grade::folders_missing_from(roster, {decomposed}).empty());
    CHECK(grade::roster_warnings(roster, {decomposed}).empty());
  }

  TEST_CASE("the roster's warnings: none given, folders it does not list, students without a folder") {
    CHECK(grade::roster_warnings({}, {"alice"}).at(0).find("no --roster: canvas-import.csv") == 0);
    const grade::Roster roster = grade::parse_roster("folder,student_id,name\nalice,1,Alice A\nbob,2,\n", "r.csv");
    const auto warnings = grade::roster_warnings(roster, {"alice", "carol"});
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0] == "the roster does not list 1 submission folder(s), so the platforms' files carry no id for "
                         "them: carol");
    CHECK(warnings[1] == "1 student(s) of the roster have no submission folder, so nothing of theirs was graded and "
                         "the files have no row for them: bob");
  }

  TEST_CASE("the roster's ids reach the gradebook, Canvas and Gradescope; a lab not judged here is blank") {
    const grade::Roster roster = grade::parse_roster("folder,student_id,name,email\n"
                                                     "dave smith,1001,\"Smith, Dave\",dave@uni.edu\n",
                                                     "roster.csv");
    const std::vector<grade::Report> reports = {
        report_of("dave smith", {graded(histogram, 4, 4, 20), unrun(dot, grade::LabStatus::not_run, "not run")}),
        report_of("eve", {graded(histogram, 4, 2), graded(dot, 4, 4, 40)})};
    const std::vector<grade::LabSpec> labs = {histogram, dot};

    const std::string gradebook = grade::gradebook_csv(reports, labs, roster);
    CHECK(gradebook.find("student,student_id,name,email,lab01-histogram,lab02-dot,") == 0);
    CHECK(gradebook.find("\ndave smith,1001,\"Smith, Dave\",dave@uni.edu,80,,,200,") != std::string::npos);

    // Canvas's import: its five identity columns, an assignment per lab, points possible first.
    const auto canvas = grade::parse_csv(grade::canvas_csv(reports, labs, roster));
    REQUIRE(canvas.size() == 4);
    CHECK(canvas[0] == std::vector<std::string>{"Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                                                "Lab 01 histogram", "Lab 02 dot"});
    CHECK(canvas[1] == std::vector<std::string>{"Points Possible", "", "", "", "", "100", "100"});
    CHECK(canvas[2] == std::vector<std::string>{"Smith, Dave", "", "1001", "dave@uni.edu", "", "80", ""});
    CHECK(canvas[3] == std::vector<std::string>{"eve", "", "", "", "", "30", "100"});

    // Gradescope's score import, one lab's assignment at a time.
    const auto lab_01 = grade::parse_csv(grade::gradescope_scores_csv(reports, histogram, roster));
    REQUIRE(lab_01.size() == 3);
    CHECK(lab_01[0] == std::vector<std::string>{"Name", "SID", "Email", "Total Score"});
    CHECK(lab_01[1] == std::vector<std::string>{"Smith, Dave", "1001", "dave@uni.edu", "80"});
    CHECK(lab_01[2] == std::vector<std::string>{"eve", "", "", "30"});
    const auto lab_02 = grade::parse_csv(grade::gradescope_scores_csv(reports, dot, roster));
    CHECK(lab_02[1] == std::vector<std::string>{"Smith, Dave", "1001", "dave@uni.edu", ""});
    CHECK(lab_02[2] == std::vector<std::string>{"eve", "", "", "100"});
  }

  TEST_CASE("PrairieLearn's results.json has the documented fields and types") {
    // docs/externalGrading.md, "Grading results": gradable (bool), score (0..1), message,
    // output, and tests of name, description, points, max_points, message, output.
    grade::Report report = report_of("alice", {graded(histogram, 4, 3, 20)});
    report.labs[0].cases[1].hidden = true;
    report.labs[0].cases[3].hidden = true;  // failed: its details withheld
    const json results = grade::prairielearn_results(report, histogram);
    REQUIRE(results.is_object());
    CHECK(results.at("gradable").is_boolean());
    CHECK(results.at("gradable") == true);
    REQUIRE(results.at("score").is_number());
    CHECK(results["score"].get<double>() == doctest::Approx(65.0 / 100));
    CHECK(results.at("message").is_string());
    CHECK(results.at("output").is_string());
    REQUIRE(results.at("tests").is_array());
    REQUIRE(results["tests"].size() == 5);
    double max_points = 0;
    for (const json& test : results["tests"]) {
      for (const char* key : {"name", "description", "message", "output"})
        CHECK_MESSAGE(test.at(key).is_string(), key);
      for (const char* key : {"points", "max_points"}) CHECK_MESSAGE(test.at(key).is_number(), key);
      CHECK(test["points"].get<double>() <= test["max_points"].get<double>());
      max_points += test["max_points"].get<double>();
    }
    CHECK(max_points == doctest::Approx(100));
    CHECK(results["tests"][3]["output"] == "hidden case: details are withheld");
    CHECK(grade::json_text(results).find("bin 3 expected") == std::string::npos);

    // Nothing judged here (no GPU): not gradable, and no score that would count as zero.
    const json not_gradable = grade::prairielearn_results(
        report_of("bob", {unrun(histogram, grade::LabStatus::not_run, "not run: no CUDA GPU found here")}), histogram);
    CHECK(not_gradable.at("gradable") == false);
    CHECK_FALSE(not_gradable.contains("score"));
  }

  TEST_CASE("a batch writes the platforms' files and a handout folder of HTML reports without hidden details") {
    const fs::path out = fs::temp_directory_path() / "labkit-test-exports-batch";
    fs::remove_all(out);
    grade::Report report = report_of("dave smith", {graded(histogram, 4, 3)});
    report.labs[0].cases[3].hidden = true;
    grade::write_batch_outputs({report}, {histogram}, out.string());
    for (const char* file : {"gradebook.csv", "junit.xml", "canvas-import.csv", "gradescope-scores/01-histogram.csv",
                             "students/dave-smith.json", "students/dave-smith.md", "handout/dave-smith.html",
                             "gradescope/01-histogram/dave-smith/results.json",
                             "prairielearn/01-histogram/dave-smith/results.json"})
      CHECK_MESSAGE(fs::exists(out / file), file);
    CHECK(read(out / "handout" / "dave-smith.html").find("bin 3 expected") == std::string::npos);
    CHECK(read(out / "handout" / "dave-smith.html").find("Grade report: dave smith") != std::string::npos);
    CHECK(json::parse(read(out / "students" / "dave-smith.json"))["who"] == "dave smith");

    // Graded again where the lab could not run: the earlier Gradescope file goes, as it would be a score.
    grade::write_batch_outputs({report_of("dave smith", {unrun(histogram, grade::LabStatus::not_run, "not run")})},
                               {histogram}, out.string());
    CHECK_FALSE(fs::exists(out / "gradescope" / "01-histogram" / "dave-smith" / "results.json"));
    CHECK(json::parse(read(out / "prairielearn" / "01-histogram" / "dave-smith" / "results.json"))["gradable"] == false);
    fs::remove_all(out);
  }

  TEST_CASE("the console names every file and folder a batch writes, and each is there") {
    const fs::path out = fs::temp_directory_path() / "labkit-test-exports-named";
    fs::remove_all(out);
    grade::write_batch_outputs({report_of("dave smith", {graded(histogram, 4, 3)})}, {histogram}, out.string());
    const std::string line = grade::batch_files_line(out);
    CHECK(line.rfind("Gradebook: " + (out / "gradebook.csv").string(), 0) == 0);
    const std::vector<grade::BatchFile> files = grade::every_report_writer().batch_files();
    CHECK(files.size() >= 8);
    for (const grade::BatchFile& file : files) {
      CAPTURE(file.name);
      CHECK(line.find(file.name) != std::string::npos);
      std::string path = file.name;
      if (const auto lab = path.find("LAB"); lab != std::string::npos) path.replace(lab, 3, "01-histogram");
      CHECK(fs::exists(out / path));
    }
    fs::remove_all(out);
  }

  // A format of the test's own: it notes what the writers hand it.
  struct NotingWriter final : grade::ReportWriter {
    static inline std::vector<std::string> given;
    void write_run(const grade::RunOutput& run) override { given.push_back("run " + run.report.who); }
    void write_batch(const grade::BatchOutput& batch) override {
      for (const std::string& name : batch.file_names) given.push_back("batch " + name);
    }
  };

  TEST_CASE("a format added to the writers is given each run and each batch, with the students' file names") {
    grade::ReportWriters writers;
    writers.add<NotingWriter>();
    const std::vector<grade::Report> reports = {report_of("dave smith", {}), report_of("alice", {})};
    writers.write_run({reports[1], {histogram}, "unused"});
    writers.write_batch({reports, {histogram}, {}, grade::report_file_names(reports), "unused"});
    CHECK(NotingWriter::given == std::vector<std::string>{"run alice", "batch dave-smith", "batch alice"});
  }
}
