// The class speed board from a synthetic batch: which submissions it ranks and in what order,
// who is shown (only students the roster gives a handle), the library's ratio beside them,
// and the CSV; then the same board from the files a batch writes. No GPU, no compiler.
#include "bad_input.h"
#include "board.h"
#include "model.h"
#include "report/report_writer.h"
#include "roster.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* sort_library = "cub::DeviceRadixSort::SortKeys";

grade::CaseResult correctness(const std::string& name, bool passed = true) {
  grade::CaseResult c{name, "correctness"};
  c.outcome = passed ? grade::Outcome::passed : grade::Outcome::failed;
  return c;
}

// A timed case as the runner records it: reference 2 ms, the library 2.5 ms (ratio 0.8).
grade::CaseResult timed(const std::string& name, double ratio, bool with_library = true) {
  grade::CaseResult c{name, "performance"};
  c.outcome = grade::Outcome::passed;
  c.timing = {{"ratio", ratio},
              {"output_ok", true},
              {"student", {{"median_ms", 2.0 / ratio}, {"gbps", 1000 * ratio}, {"percent_of_peak", 30 * ratio}}},
              {"reference", {{"median_ms", 2.0}, {"gbps", 1000}, {"percent_of_peak", 30}}}};
  if (with_library) c.timing["anchor"] = {{"name", sort_library}, {"median_ms", 2.5}};
  return c;
}

// Lab 09 with a correctness case named as a timed case, as lab 01's are: the board must take
// the timed one.
grade::LabResult sort_lab(double first_ratio, double second_ratio) {
  grade::LabResult lab{"09", "radix-sort", "Radix sort"};
  lab.cases = {correctness("random-1"), correctness("sort-2^20"), timed("sort-2^20", first_ratio),
               timed("sort-2^24", second_ratio)};
  lab.device = {{"name", "NVIDIA H100 80GB HBM3"}};
  grade::add_totals(lab);
  return lab;
}

grade::LabResult histogram_lab(double ratio) {
  grade::LabResult lab{"01", "histogram", "Histogram"};
  lab.cases = {correctness("uniform-1"), timed("uniform-100MiB", ratio, false)};
  lab.device = {{"name", "NVIDIA H100 80GB HBM3"}};
  grade::add_totals(lab);
  return lab;
}

grade::Report report_of(const std::string& who, std::vector<grade::LabResult> labs) {
  grade::Report report{who, "student files", std::move(labs)};
  grade::add_totals(report);
  return report;
}

// Folders are the students' names; the handles they chose are nothing like them.
std::vector<grade::Report> sample_class() {
  grade::LabResult failing = sort_lab(5, 5);
  failing.cases[0] = correctness("random-1", false);
  grade::LabResult too_fast = sort_lab(1, 1);
  too_fast.cases[3].outcome = grade::Outcome::failed;  // faster than memory allows: no credit
  grade::LabResult not_compiled = sort_lab(1, 1);
  not_compiled.status = grade::LabStatus::build_failed;
  return {report_of("Ada Lovelace", {histogram_lab(1.5), sort_lab(1.44, 1.0)}),
          report_of("Bob Builder", {sort_lab(1.0, 1.0)}),
          report_of("Cyd Charisse", {sort_lab(0.5, 0.5)}),
          report_of("Dan Dare", {sort_lab(3.0, 3.0)}),
          report_of("Eve Evans", {failing}),
          report_of("Fay Faster", {too_fast}),
          report_of("Gus Grissom", {histogram_lab(0.9), sort_lab(1.0, 1.0)}),
          report_of("Hal Hidden", {not_compiled})};
}

// Dan chose no handle; Hal is not on the roster at all.
const char* sample_roster =
    "folder,name,handle\n"
    "Ada Lovelace,Ada,countess\n"
    "Bob Builder,Bob,\"bob, the builder\"\n"
    "Cyd Charisse,Cyd,cyd\n"
    "Dan Dare,Dan,\n"
    "Eve Evans,Eve,eve\n"
    "Fay Faster,Fay,fay\n"
    "Gus Grissom,Gus,<gus>\n";

std::vector<std::string> handles(const grade::LabBoard& board) {
  std::vector<std::string> shown;
  for (const grade::BoardEntry& entry : board.entries) shown.push_back(entry.handle);
  return shown;
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_SUITE("board") {
  TEST_CASE("the roster's optional handle column; two students cannot share a handle") {
    const grade::Roster roster = grade::parse_roster(sample_roster, "roster.csv");
    CHECK(grade::student_of(roster, "Ada Lovelace").handle == "countess");
    CHECK(grade::student_of(roster, "Dan Dare").handle.empty());
    CHECK(grade::student_of(grade::parse_roster("folder\nann\n", "r.csv"), "ann").handle.empty());
    CHECK_THROWS_WITH_AS(grade::parse_roster("folder,handle\nann,Zed\nben,zed\n", "r.csv"),
                         "the roster r.csv, row 3: the handle zed is another student's too", grade::BadInput);
  }

  TEST_CASE("on the board: graded, every correctness case passed, every timed case credited") {
    const auto reports = sample_class();
    CHECK(grade::on_board(reports[0].labs[1]));
    CHECK_FALSE(grade::on_board(reports[4].labs[0]));  // a correctness case failed
    CHECK_FALSE(grade::on_board(reports[5].labs[0]));  // a timed case without credit
    CHECK_FALSE(grade::on_board(reports[7].labs[0]));  // did not compile
    grade::LabResult not_timed = sort_lab(1, 1);
    not_timed.cases[3].outcome = grade::Outcome::not_run;
    not_timed.cases[3].timing = nullptr;
    CHECK_FALSE(grade::on_board(not_timed));
  }

  TEST_CASE("ranked by the geometric mean of the case ratios; ties share a rank; no handle, not shown") {
    const auto boards = grade::speed_boards(sample_class(), grade::parse_roster(sample_roster, "roster.csv"));
    REQUIRE(boards.size() == 2);
    const grade::LabBoard& sort = boards[1];
    CHECK(boards[0].id == "01");  // by lab, whatever order the reports hold them in
    CHECK(sort.id == "09");
    CHECK(sort.cases == std::vector<std::string>{"sort-2^20", "sort-2^24"});
    CHECK(handles(sort) == std::vector<std::string>{"countess", "<gus>", "bob, the builder", "cyd"});
    REQUIRE(sort.entries.size() == 4);
    CHECK(sort.entries[0].ratio == doctest::Approx(1.2));  // sqrt(1.44 * 1.0)
    CHECK(sort.entries[0].case_ratios == std::vector<double>{1.44, 1.0});
    CHECK(sort.entries[0].rank == 1);
    CHECK(sort.entries[1].rank == 2);
    CHECK(sort.entries[2].rank == 2);
    CHECK(sort.entries[3].rank == 4);
    // Dan (ratio 3, the fastest) chose no handle: counted, never named. Hal is not on the roster.
    CHECK(sort.submissions == 8);
    CHECK(sort.correct_and_timed == 5);
    CHECK(sort.gpus == std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  }

  TEST_CASE("the library's ratio: reference time over the library's, per case and over the lab") {
    const auto boards = grade::speed_boards(sample_class(), grade::parse_roster(sample_roster, "roster.csv"));
    REQUIRE(boards[1].library);
    const grade::LibraryOnBoard& library = *boards[1].library;
    CHECK(library.name() == sort_library);
    REQUIRE(library.case_ratios.size() == 2);
    CHECK(library.case_ratios[0].value() == doctest::Approx(0.8));
    REQUIRE(library.ratio);
    CHECK(*library.ratio == doctest::Approx(0.8));
    CHECK_FALSE(boards[0].library);  // lab 01 times no library
  }

  TEST_CASE("the CSV: a row per entry, the library beside each, blank where the lab has none") {
    const auto boards = grade::speed_boards(sample_class(), grade::parse_roster(sample_roster, "roster.csv"));
    CHECK(grade::board_csv(boards) ==
          "lab,rank,handle,ratio,library,library_ratio\n"
          "01-histogram,1,countess,1.500,,\n"
          "01-histogram,2,<gus>,0.900,,\n"
          "09-radix-sort,1,countess,1.200,cub::DeviceRadixSort::SortKeys,0.800\n"
          "09-radix-sort,2,<gus>,1.000,cub::DeviceRadixSort::SortKeys,0.800\n"
          "09-radix-sort,2,\"bob, the builder\",1.000,cub::DeviceRadixSort::SortKeys,0.800\n"
          "09-radix-sort,4,cyd,0.500,cub::DeviceRadixSort::SortKeys,0.800\n");
  }

  TEST_CASE("the HTML: handles escaped, the library's row where its ratio falls, no student's name") {
    const auto boards = grade::speed_boards(sample_class(), grade::parse_roster(sample_roster, "roster.csv"));
    const std::string html = grade::board_html(boards, "class");
    const std::size_t sort = html.find("Lab 09");
    const std::size_t bob = html.find("bob, the builder", sort);
    const std::size_t library = html.find(sort_library, sort);
    const std::size_t cyd = html.find(">cyd<", sort);
    REQUIRE(bob != std::string::npos);
    REQUIRE(cyd != std::string::npos);
    CHECK(bob < library);
    CHECK(library < cyd);
    CHECK(html.find("&lt;gus&gt;") != std::string::npos);
    CHECK(html.find("<gus>") == std::string::npos);
    CHECK(html.find("1 left off (no handle in the roster)") != std::string::npos);
    for (const char* name : {"Ada", "Bob Builder", "Dan", "Hal"})
      CHECK_MESSAGE(html.find(name) == std::string::npos, name);
  }

  TEST_CASE("from a batch's files: students/WHO.json of the students its gradebook lists") {
    const fs::path dir = fs::temp_directory_path() / "labkit-board-test";
    fs::remove_all(dir);
    CHECK_THROWS_AS(grade::read_batch_results(dir.string()), grade::BadInput);
    grade::LabSpec histogram, sort;
    histogram.id = "01", histogram.name = "histogram", histogram.dir = "01-histogram";
    sort.id = "09", sort.name = "radix-sort", sort.dir = "09-radix-sort";
    std::vector<grade::Report> reports = sample_class();
    for (grade::Report& report : reports)  // a batch's reports hold every lab it graded
      if (report.labs.size() == 1) report.labs.insert(report.labs.begin(), histogram_lab(0.1));
    grade::write_batch_outputs(reports, {histogram, sort}, dir.string());
    // An earlier class's file in the same folder: not in the gradebook, so not read.
    grade::Report stranger = report_of("Zed Stranger", {histogram_lab(9), sort_lab(9, 9)});
    std::ofstream(dir / "students" / "Zed-Stranger.json") << grade::json_text(grade::to_json(stranger));
    const grade::Roster roster = grade::parse_roster(std::string(sample_roster) + "Zed Stranger,Zed,zed\n", "r.csv");

    const std::string summary = grade::write_board(dir.string(), roster, (dir / "board").string());
    CHECK(file_text(dir / "board" / "board.csv") == grade::board_csv(grade::speed_boards(reports, roster)));
    CHECK(file_text(dir / "board" / "board.csv").find("zed") == std::string::npos);
    CHECK(file_text(dir / "board" / "board.html").find("countess") != std::string::npos);
    CHECK(summary.find("lab 09 radix-sort: 5 of 8 submissions correct and timed, 4 on the board (1 without a handle "
                       "left off); first: countess, ratio 1.20; library (cub::DeviceRadixSort::SortKeys) 0.80") !=
          std::string::npos);
    fs::remove_all(dir);
  }
}
