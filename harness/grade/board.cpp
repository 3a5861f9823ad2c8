#include "board.h"

#include "bad_input.h"
#include "batch.h"
#include "report/html_report.h"
#include "text.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace grade {

namespace {

// A timed case with its credit: the runner's ratio, and the scoring let it stand.
bool timed(const CaseResult& c) {
  return c.kind == "performance" && c.passed() && c.timing.is_object() && c.timing.contains("ratio") &&
         c.timing["ratio"].is_number() && c.timing["ratio"].get<double>() > 0;
}

std::vector<std::string> performance_cases(const LabResult& lab) {
  std::vector<std::string> names;
  for (const CaseResult& c : lab.cases)
    if (c.kind == "performance") names.push_back(c.name);
  return names;
}

// By kind too: a correctness case may bear a timed case's name (lab 01's uniform-100MiB).
const CaseResult* find_timed_case(const LabResult& lab, const std::string& name) {
  for (const CaseResult& c : lab.cases)
    if (c.kind == "performance" && c.name == name) return &c;
  return nullptr;
}

const LabResult* find_lab(const Report& report, const std::string& id) {
  for (const LabResult& lab : report.labs)
    if (lab.id == id) return &lab;
  return nullptr;
}

// Ratios multiply (twice as fast on one case, half on another is even), so they are averaged
// as their logarithms: no one case's scale (lab 12's 40x over the chapter) outweighs the rest.
double geometric_mean(const std::vector<double>& values) {
  double logs = 0;
  for (double value : values) logs += std::log(value);
  return values.empty() ? 0 : std::exp(logs / double(values.size()));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// The library's ratio in one record: reference time / library time, both timed together.
std::optional<double> library_ratio(const CaseResult& c) {
  const auto library = library_time(c);
  if (!library || !c.timing.contains("reference") || !c.timing["reference"].is_object()) return std::nullopt;
  const double reference_ms = c.timing["reference"].value("median_ms", 0.0);
  if (!(reference_ms > 0)) return std::nullopt;
  return reference_ms / library->median_ms;
}

// Every record of the batch counts, on the board or not: the library's time is no student's.
std::optional<LibraryOnBoard> library_of(const std::vector<Report>& reports, const LabBoard& board) {
  LibraryOnBoard library;
  for (const std::string& name : board.cases) {
    std::vector<double> ratios;
    std::string library_name;
    for (const Report& report : reports) {
      const LabResult* lab = find_lab(report, board.id);
      const CaseResult* c = lab ? find_timed_case(*lab, name) : nullptr;
      if (const auto ratio = c ? library_ratio(*c) : std::nullopt) {
        ratios.push_back(*ratio);
        library_name = library_time(*c)->name;
      }
    }
    library.names.push_back(library_name);
    library.case_ratios.push_back(ratios.empty() ? std::nullopt : std::optional<double>(median(ratios)));
  }
  std::vector<double> every_case;
  for (const auto& ratio : library.case_ratios)
    if (ratio) every_case.push_back(*ratio);
  if (every_case.empty()) return std::nullopt;
  if (every_case.size() == board.cases.size()) library.ratio = geometric_mean(every_case);
  return library;
}

std::string gpu_of(const LabResult& lab) {
  return lab.device.is_object() ? lab.device.value("name", std::string()) : std::string();
}

BoardEntry entry_of(const LabResult& lab, const std::vector<std::string>& cases, const std::string& handle) {
  BoardEntry entry{0, handle, 0, {}, gpu_of(lab)};
  for (const std::string& name : cases)
    entry.case_ratios.push_back(find_timed_case(lab, name)->timing["ratio"].get<double>());
  entry.ratio = geometric_mean(entry.case_ratios);
  return entry;
}

// The fastest first; equal ratios share a rank and go by handle.
void rank(std::vector<BoardEntry>& entries) {
  std::sort(entries.begin(), entries.end(), [](const BoardEntry& a, const BoardEntry& b) {
    return a.ratio != b.ratio ? a.ratio > b.ratio : a.handle < b.handle;
  });
  for (std::size_t i = 0; i < entries.size(); ++i)
    entries[i].rank = i > 0 && entries[i].ratio == entries[i - 1].ratio ? entries[i - 1].rank : int(i + 1);
}

// Whether the lab was timed on exactly the board's cases, each with its credit.
bool timed_on(const LabResult& lab, const std::vector<std::string>& cases) {
  return on_board(lab) && performance_cases(lab) == cases;
}

LabBoard board_of(const LabResult& first, const std::vector<Report>& reports, const Roster& roster) {
  LabBoard board{first.id, first.name, first.title, performance_cases(first), {}, std::nullopt, 0, 0, {}};
  std::set<std::string> gpus;
  for (const Report& report : reports) {
    const LabResult* lab = find_lab(report, board.id);
    if (!lab) continue;
    ++board.submissions;
    if (!timed_on(*lab, board.cases)) continue;
    ++board.correct_and_timed;
    const std::string handle = student_of(roster, report.who).handle;
    if (handle.empty()) continue;  // not opted in: counted, never named
    board.entries.push_back(entry_of(*lab, board.cases, handle));
    if (!board.entries.back().gpu.empty()) gpus.insert(board.entries.back().gpu);
  }
  rank(board.entries);
  board.library = library_of(reports, board);
  board.gpus.assign(gpus.begin(), gpus.end());
  return board;
}

std::string lab_folder(const LabBoard& board) { return board.id + "-" + board.name; }

std::string ratio_text(double ratio) { return format("%.2f", ratio); }

std::string counted(std::size_t count, const std::string& thing) {
  return std::to_string(count) + " " + thing + (count == 1 ? "" : "s");
}

}  // namespace

bool on_board(const LabResult& lab) {
  if (lab.status != LabStatus::graded) return false;
  bool any_timed = false;
  for (const CaseResult& c : lab.cases) {
    if (c.kind == "correctness" && !c.passed()) return false;
    if (c.kind == "performance" && !timed(c)) return false;
    any_timed = any_timed || c.kind == "performance";
  }
  return any_timed;
}

std::string LibraryOnBoard::name() const {
  std::vector<std::string> distinct;
  for (const std::string& each : names)
    if (!each.empty() && std::find(distinct.begin(), distinct.end(), each) == distinct.end()) distinct.push_back(each);
  return joined(distinct, ", ");
}

std::vector<LabBoard> speed_boards(const std::vector<Report>& reports, const Roster& roster) {
  std::vector<LabBoard> boards;
  std::set<std::string> seen;
  for (const Report& report : reports)
    for (const LabResult& lab : report.labs)
      if (seen.insert(lab.id).second && !performance_cases(lab).empty())
        boards.push_back(board_of(lab, reports, roster));
  std::sort(boards.begin(), boards.end(), [](const LabBoard& a, const LabBoard& b) { return a.id < b.id; });
  return boards;
}

std::string board_csv(const std::vector<LabBoard>& boards) {
  std::string csv = csv_row({"lab", "rank", "handle", "ratio", "library", "library_ratio"});
  for (const LabBoard& board : boards) {
    const std::string library = board.library ? board.library->name() : "";
    const std::string library_ratio =
        board.library && board.library->ratio ? format("%.3f", *board.library->ratio) : "";
    for (const BoardEntry& entry : board.entries)
      csv += csv_row({lab_folder(board), std::to_string(entry.rank), entry.handle, format("%.3f", entry.ratio),
                      library, library_ratio});
  }
  return csv;
}

namespace {

// The board's own rules, after the reports' shared look (report/html_report.h's page_base_style).
constexpr const char* board_style = R"(
.total { font-size: 16px; font-weight: 600; white-space: nowrap; color: #57606a; }
.library-badge { background: #fbefff; color: #8250df; }
td, th { vertical-align: middle; }
tr.library td { background: #fbefff; }
.meter { width: 140px; }
.meter > div { height: 100%; background: #0969da; }
tr.library .meter > div { background: #8250df; }
@media (max-width: 600px) {
  .meter { width: 60px; }
}
)";

std::string meter(double ratio, double longest) {
  const double width = longest > 0 ? std::clamp(ratio / longest, 0.0, 1.0) * 100 : 0;
  return "<div class=\"meter\"><div style=\"width:" + format("%.1f", width) + "%\"></div></div>";
}

void entry_row(std::ostringstream& out, const BoardEntry& entry, double longest) {
  out << "<tr><td class=\"num\">" << entry.rank << "</td><td>" << html_escaped(entry.handle)
      << "</td><td class=\"num\"><strong>" << ratio_text(entry.ratio) << "</strong></td><td>"
      << meter(entry.ratio, longest) << "</td>";
  for (double ratio : entry.case_ratios) out << "<td class=\"num\">" << ratio_text(ratio) << "</td>";
  out << "</tr>\n";
}

void library_row(std::ostringstream& out, const LibraryOnBoard& library, double longest) {
  out << "<tr class=\"library\"><td class=\"num\"></td><td><span class=\"badge library-badge\">library</span> <code>"
      << html_escaped(library.name()) << "</code></td><td class=\"num\"><strong>"
      << (library.ratio ? ratio_text(*library.ratio) : "&ndash;") << "</strong></td><td>"
      << (library.ratio ? meter(*library.ratio, longest) : "") << "</td>";
  for (const auto& ratio : library.case_ratios)
    out << "<td class=\"num\">" << (ratio ? ratio_text(*ratio) : "&ndash;") << "</td>";
  out << "</tr>\n";
}

// The longest bar: the fastest entry's or the library's ratio.
double longest_ratio(const LabBoard& board) {
  double longest = board.entries.empty() ? 0 : board.entries.front().ratio;
  if (board.library && board.library->ratio) longest = std::max(longest, *board.library->ratio);
  return longest;
}

// The library's row goes where its ratio falls among the entries (unranked); without a ratio
// over every case, last.
void board_table(std::ostringstream& out, const LabBoard& board) {
  const double longest = longest_ratio(board);
  out << "<div class=\"table-wrap\"><table><tr><th>rank</th><th>handle</th><th>ratio to the reference</th><th></th>";
  for (const std::string& name : board.cases) out << "<th><code>" << html_escaped(name) << "</code></th>";
  out << "</tr>\n";
  bool library_shown = !board.library;
  for (const BoardEntry& entry : board.entries) {
    if (!library_shown && board.library->ratio && *board.library->ratio > entry.ratio)
      library_row(out, *board.library, longest), library_shown = true;
    entry_row(out, entry, longest);
  }
  if (!library_shown) library_row(out, *board.library, longest);
  out << "</table></div>\n";
}

std::string who_is_shown(const LabBoard& board) {
  const std::size_t hidden = board.correct_and_timed - board.entries.size();
  return std::to_string(board.correct_and_timed) + " of the class's " + counted(board.submissions, "submission") +
         " passed every correctness case and were timed on every case; " + std::to_string(board.entries.size()) +
         " shown" + (hidden > 0 ? ", " + std::to_string(hidden) + " left off (no handle in the roster)" : "") + ".";
}

void lab_section(std::ostringstream& out, const LabBoard& board) {
  out << "<section class=\"lab\"><div class=\"lab-head\"><h2>Lab " << html_escaped(board.id) << " "
      << html_escaped(board.name) << ": " << html_escaped(board.title) << "</h2><span class=\"total\">"
      << board.entries.size() << " shown</span></div>\n<p class=\"note\">"
      << html_escaped(who_is_shown(board));
  if (!board.gpus.empty()) out << " Timed on " << html_escaped(joined(board.gpus, ", ")) << ".";
  if (board.library && !board.library->ratio)
    out << " The library does the job of some of the cases only: its ratio is given for those.";
  out << "</p>\n";
  if (board.entries.empty()) out << "<p>No correct, timed submission with a handle yet.</p>\n";
  if (!board.entries.empty() || board.library) board_table(out, board);
  out << "</section>\n";
}

}  // namespace

std::string board_html(const std::vector<LabBoard>& boards, const std::string& class_name) {
  std::ostringstream out;
  const std::string title = "Speed board: class " + class_name;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" << html_escaped(title)
      << "</title><style>" << page_base_style << board_style << "</style></head>\n<body><main><h1>" << html_escaped(title)
      << "</h1><p class=\"sub\">Per lab, the submissions that passed every correctness case, ranked by their "
      << "ratio: the reference solution's time over the submission's, on the same GPU and inputs (above 1: "
      << "faster than the reference), the geometric mean over the lab's timed cases, whose own ratios follow. "
      << "Only students who chose a handle are shown. The library row is the library that does the lab's job "
      << "(CUB, cuBLAS), timed beside the reference: a mark to beat, not ranked.</p>\n";
  for (const LabBoard& board : boards) lab_section(out, board);
  out << "</main></body></html>\n";
  return out.str();
}

std::string board_summary(const std::vector<LabBoard>& boards) {
  std::ostringstream out;
  for (const LabBoard& board : boards) {
    out << "lab " << board.id << " " << board.name << ": " << board.correct_and_timed << " of "
        << counted(board.submissions, "submission") << " correct and timed, " << board.entries.size()
        << " on the board";
    if (const std::size_t hidden = board.correct_and_timed - board.entries.size(); hidden > 0)
      out << " (" << hidden << " without a handle left off)";
    if (!board.entries.empty())
      out << "; first: " << board.entries.front().handle << ", ratio " << ratio_text(board.entries.front().ratio);
    if (board.library && board.library->ratio)
      out << "; library (" << board.library->name() << ") " << ratio_text(*board.library->ratio);
    out << "\n";
  }
  return out.str();
}

namespace {

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The students a gradebook lists: its `student` column.
std::set<std::string> gradebook_students(const fs::path& gradebook) {
  const auto records = parse_csv(file_text(gradebook));
  const auto header = records.empty() ? std::vector<std::string>{} : records.front();
  const auto column = std::find(header.begin(), header.end(), "student");
  if (column == header.end()) throw BadInput(gradebook.string() + " has no `student` column: not a batch's gradebook");
  std::set<std::string> students;
  for (std::size_t row = 1; row < records.size(); ++row)
    if (std::size_t(column - header.begin()) < records[row].size())
      students.insert(records[row][std::size_t(column - header.begin())]);
  return students;
}

Report report_from_file(const fs::path& path) {
  try {
    const json j = json::parse(file_text(path));
    Report report{j.at("who"), j.value("mode", std::string()), {}};
    for (const json& lab : j.at("labs")) report.labs.push_back(lab_from_json(lab));
    report.secret_used = j.value("secret_used", false);
    add_totals(report);
    return report;
  } catch (const json::exception& error) {
    throw BadInput("cannot read the report " + path.string() + ": " + error.what());
  }
}

}  // namespace

std::vector<Report> read_batch_results(const std::string& results_dir) {
  const fs::path gradebook = fs::path(results_dir) / "gradebook.csv";
  if (!fs::is_regular_file(gradebook))
    throw BadInput(results_dir + " holds no gradebook.csv: give the folder a batch wrote (build/reports/<class "
                                 "folder>/, or the batch's --out)");
  const std::set<std::string> listed = gradebook_students(gradebook);
  std::vector<fs::path> files;
  if (fs::is_directory(fs::path(results_dir) / "students"))
    for (const auto& entry : fs::directory_iterator(fs::path(results_dir) / "students"))
      if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<Report> reports;
  for (const fs::path& file : files) {
    Report report = report_from_file(file);
    if (listed.count(report.who)) reports.push_back(std::move(report));
  }
  return reports;
}

std::string write_board(const std::string& results_dir, const Roster& roster, const std::string& out_dir) {
  const std::vector<LabBoard> boards = speed_boards(read_batch_results(results_dir), roster);
  fs::create_directories(out_dir);
  std::ofstream(fs::path(out_dir) / "board.html") << board_html(boards, class_name(results_dir));
  std::ofstream(fs::path(out_dir) / "board.csv") << board_csv(boards);
  return board_summary(boards);
}

}  // namespace grade
