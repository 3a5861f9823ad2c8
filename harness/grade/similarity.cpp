#include "similarity.h"

#include "intake.h"
#include "model.h"
#include "process.h"
#include "report/html_report.h"
#include "sanitize.h"
#include "text.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace grade {

namespace {

// The starter's name among the files sim_c++ compares; a submission's is its index's.
constexpr const char* starter_name = "starter.cu";
// Pairs whose passages the HTML report shows side by side, and pairs in its table: a class of
// 300 has thousands of pairs that share a little; the CSV has them all.
constexpr std::size_t pairs_shown_in_full = 30;
constexpr std::size_t pairs_in_table = 300;
// sim_c++ on a few hundred files of a few hundred lines takes seconds; a class of thousands, minutes.
constexpr int sim_wall_seconds = 1800;

std::string copy_name(std::size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "s%05zu.cu", index);
  return name;
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// The student files `files` in `dir`, one after another.
ComparedCopy read_copy(const std::string& who, const std::vector<std::string>& files, const fs::path& dir) {
  ComparedCopy copy{who, {}, {}, {}};
  for (const std::string& file : files) {
    const std::vector<std::string> lines = lines_of(dir / file);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      copy.lines.push_back(lines[i]);
      copy.origins.push_back(file + ":" + std::to_string(i + 1));
    }
  }
  copy.from_starter.assign(copy.lines.size(), false);
  return copy;
}

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream out(file, std::ios::binary);
  for (const std::string& line : lines) out << line << "\n";
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

// Runs sim_c++ with `options` on `files` (names in `folder`), and returns what it wrote.
std::string run_sim(const std::string& sim, const std::vector<std::string>& options,
                    const std::vector<std::string>& files, const fs::path& folder, const std::string& output_name) {
  const fs::path output = folder / output_name;
  std::vector<std::string> argv = {sim, "-T", "-o", output.string()};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), files.begin(), files.end());
  const ChildOutcome outcome =
      run_child({argv, {}, {}, (folder / (output_name + ".log")).string(), folder.string()},
                {sim_wall_seconds, 2 * sim_wall_seconds});
  if (outcome.exit_code != 0)
    throw std::runtime_error("sim_c++ " + outcome.describe() + ": " + outcome.output_tail);
  std::ifstream in(output, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Marks in each copy the lines of the passages sim_c++ finds in the starter: what the kit
// handed out is shared by everyone and says nothing of who copied whom.
void mark_starter_lines(std::vector<ComparedCopy>& copies, const ComparedCopy& starter, const std::string& sim,
                        const fs::path& folder) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    write_lines(folder / copy_name(i), copies[i].lines);
    names.push_back(copy_name(i));
  }
  write_lines(folder / starter_name, starter.lines);
  names.insert(names.end(), {"/", starter_name});  // new files / old: each compared with the starter only
  for (const SimRun& run : parse_sim_runs(run_sim(sim, {"-n", "-S"}, names, folder, "starter-passages.txt"))) {
    const auto index = std::find(names.begin(), names.end(), run.first) - names.begin();
    if (run.second != starter_name || std::size_t(index) >= copies.size()) continue;
    std::vector<bool>& marks = copies[std::size_t(index)].from_starter;
    for (int line = run.passage.first_from; line <= run.passage.first_to && line <= int(marks.size()); ++line)
      marks[std::size_t(line - 1)] = true;
  }
}

// The copy as it is compared: the starter's lines blank, so that line numbers still hold.
std::vector<std::string> without_starter(const ComparedCopy& copy) {
  std::vector<std::string> kept = copy.lines;
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (copy.from_starter[i]) kept[i].clear();
  return kept;
}

using PairsByIndex = std::map<std::pair<std::size_t, std::size_t>, SimilarPair>;

// The pairs that share passages (`-n` runs), each passage with the lower index's lines first.
PairsByIndex pairs_of(const std::vector<SimRun>& runs, const std::map<std::string, std::size_t>& index) {
  PairsByIndex pairs;
  for (SimRun run : runs) {
    const auto first = index.find(run.first), second = index.find(run.second);
    if (first == index.end() || second == index.end() || first->second == second->second) continue;
    if (first->second > second->second) {
      std::swap(run.passage.first_from, run.passage.second_from);
      std::swap(run.passage.first_to, run.passage.second_to);
    }
    const auto key = std::minmax(first->second, second->second);
    SimilarPair& pair = pairs[key];
    pair.first = key.first;
    pair.second = key.second;
    pair.tokens += run.passage.tokens;
    pair.passages.push_back(run.passage);
  }
  return pairs;
}

// Each pair's shares (`-p`): how much of the first's code is in the second's, and the reverse.
void add_shares(PairsByIndex& pairs, const std::map<std::pair<std::string, std::string>, double>& shares,
                const std::map<std::string, std::size_t>& index) {
  for (const auto& [files, percent] : shares) {
    const auto of = index.find(files.first), in = index.find(files.second);
    if (of == index.end() || in == index.end()) continue;
    const auto found = pairs.find(std::minmax(of->second, in->second));
    if (found == pairs.end()) continue;  // sim_c++ found no passage long enough to show
    (of->second < in->second ? found->second.first_percent : found->second.second_percent) = percent;
  }
}

// The most shared first; of two pairs that share as much, the one with more tokens in common.
std::vector<SimilarPair> ranked(PairsByIndex& pairs) {
  std::vector<SimilarPair> list;
  for (auto& [key, pair] : pairs) {
    std::sort(pair.passages.begin(), pair.passages.end(),
              [](const SharedPassage& a, const SharedPassage& b) { return a.first_from < b.first_from; });
    list.push_back(pair);
  }
  std::stable_sort(list.begin(), list.end(), [](const SimilarPair& a, const SimilarPair& b) {
    if (a.shared_percent() != b.shared_percent()) return a.shared_percent() > b.shared_percent();
    return a.tokens > b.tokens;
  });
  return list;
}

std::string percent_text(double percent) { return format("%.0f%%", percent); }

// "1 pair", "3 pairs".
std::string counted(std::size_t count, const std::string& thing) {
  return std::to_string(count) + " " + thing + (count == 1 ? "" : "s");
}

}  // namespace

std::string find_similarity_tester() { return sanitize::find_tool("sim_c++", ""); }

std::vector<SimRun> parse_sim_runs(const std::string& text) {
  static const std::regex run(R"(^(\S+): line (\d+)-(\d+)\s*\|(\S+): line (\d+)-(\d+)\s*\[(\d+)\])");
  std::vector<SimRun> runs;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, run)) continue;
    runs.push_back({m[1], m[4],
                    {std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[5]), std::stoi(m[6]), std::stoi(m[7])}});
  }
  return runs;
}

std::map<std::pair<std::string, std::string>, double> parse_sim_percentages(const std::string& text) {
  static const std::regex share(R"(^(\S+) consists for (\d+) % of (\S+) material)");
  std::map<std::pair<std::string, std::string>, double> shares;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, share)) shares[{m[1], m[3]}] = std::stod(m[2]);
  }
  return shares;
}

namespace {

// The lab's files of each submission, as a batch takes them in: a part of the lab not handed
// in is left out, and so is a submission without the lab's files or with files it refuses.
void take_copies(const LabSpec& lab, const std::vector<Submission>& submissions, LabSimilarity& result) {
  for (const Submission& submission : submissions) {
    const std::string dir = submission.problem.empty() ? find_student_dir(lab, submission.base) : "";
    const std::vector<std::string> files = dir.empty() ? lab.student_files : required_files(lab, dir);
    const std::string problem = !submission.problem.empty() ? submission.problem
                                : dir.empty()                ? not_found_note(lab)
                                                             : student_files_problem(dir, files);
    if (problem.empty())
      result.copies.push_back(read_copy(submission.who, files, dir));
    else
      result.left_out.push_back(submission.who + ": " + problem);
  }
}

// sim_c++ on the copies without the starter's lines, in `work`: the pairs that share code.
// -e compares each pair of files on its own, so that a passage many share is found in every
// pair; -a gives the percentages both ways (how much of a is in b, and of b in a).
std::vector<SimilarPair> similar_pairs(std::vector<ComparedCopy>& copies, const LabSpec& lab, const std::string& sim,
                                       const fs::path& work) {
  const fs::path with_starter = work / "with-starter", compared = work / "compared";
  fs::remove_all(work);
  fs::create_directories(with_starter);
  fs::create_directories(compared);
  mark_starter_lines(copies, read_copy("starter", lab.student_files, lab.folder), sim, with_starter);
  std::vector<std::string> names;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    write_lines(compared / copy_name(i), without_starter(copies[i]));
    names.push_back(copy_name(i));
    index[copy_name(i)] = i;
  }
  const std::string runs = run_sim(sim, {"-n", "-e", "-s"}, names, compared, "passages.txt");
  const std::string shares = run_sim(sim, {"-p", "-e", "-a"}, names, compared, "percentages.txt");
  PairsByIndex pairs = pairs_of(parse_sim_runs(runs), index);
  add_shares(pairs, parse_sim_percentages(shares), index);
  return ranked(pairs);
}

}  // namespace

LabSimilarity compare_submissions(const LabSpec& lab, const std::vector<Submission>& submissions,
                                  const std::string& sim, const std::string& work_dir) {
  LabSimilarity result{&lab, {}, {}, {}};
  take_copies(lab, submissions, result);
  if (result.copies.size() >= 2) result.pairs = similar_pairs(result.copies, lab, sim, work_dir);
  return result;
}

std::string similarity_csv(const LabSimilarity& lab) {
  std::string csv = csv_row({"rank", "lab", "first", "second", "first_shared_percent", "second_shared_percent",
                             "shared_tokens", "passages"});
  for (std::size_t i = 0; i < lab.pairs.size(); ++i) {
    const SimilarPair& pair = lab.pairs[i];
    csv += csv_row({std::to_string(i + 1), lab.lab->id, lab.copies[pair.first].who, lab.copies[pair.second].who,
                    format("%.0f", pair.first_percent), format("%.0f", pair.second_percent),
                    std::to_string(pair.tokens), std::to_string(pair.passages.size())});
  }
  return csv;
}

namespace {

constexpr const char* similarity_style = R"(
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1f2328;
       background: #f6f8fa; margin: 0; }
main { max-width: 1280px; margin: 0 auto; padding: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 6px; }
.sub, .note { color: #57606a; }
table { border-collapse: collapse; width: 100%; background: #fff; }
td, th { text-align: left; padding: 5px 8px; border-top: 1px solid #eaeef2; vertical-align: top; }
th { font-size: 13px; color: #57606a; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
.passage { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; margin: 10px 0 18px; }
.side { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; overflow-x: auto; }
.side h3 { font-size: 13px; margin: 0; padding: 4px 8px; background: #eaeef2; }
pre { margin: 0; padding: 6px 8px; font: 12px/1.45 "DejaVu Sans Mono", ui-monospace, monospace; }
.at { color: #8c959f; user-select: none; }
.starter { color: #8c959f; }
)";

// One side of a passage: its lines with where each comes from.
std::string passage_side(const ComparedCopy& copy, int from, int to, int tokens) {
  std::ostringstream out;
  out << "<div class=\"side\"><h3>" << html_escaped(copy.who) << ": lines " << from << "-" << to << " (" << tokens
      << " tokens)</h3><pre>";
  for (int line = from; line <= to && line <= int(copy.lines.size()); ++line) {
    const std::size_t at = std::size_t(line - 1);
    out << "<span class=\"at\">" << html_escaped(copy.origins[at]) << "  </span>"
        << (copy.from_starter[at] ? "<span class=\"starter\">" + html_escaped(copy.lines[at]) + "</span>"
                                  : html_escaped(copy.lines[at]))
        << "\n";
  }
  out << "</pre></div>";
  return out.str();
}

std::string pair_title(const LabSimilarity& lab, const SimilarPair& pair) {
  const std::string& first = lab.copies[pair.first].who;
  const std::string& second = lab.copies[pair.second].who;
  return first + " and " + second + ": " + percent_text(pair.first_percent) + " of " + first + "'s code is in " +
         second + "'s, " + percent_text(pair.second_percent) + " of " + second + "'s in " + first + "'s";
}

}  // namespace

std::string similarity_html(const LabSimilarity& lab, const std::string& class_name) {
  std::ostringstream out;
  const std::string title = "Similarity in lab " + lab.lab->id + " " + lab.lab->name + ", class " + class_name;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" << html_escaped(title)
      << "</title><style>" << similarity_style << "</style></head><body><main>\n<h1>" << html_escaped(title)
      << "</h1>\n<p class=\"sub\">" << lab.copies.size() << " submissions compared by sim_c++ (similarity-tester) "
      << "on their " << html_escaped(joined(lab.lab->student_files, ", "))
      << ", token by token: names, comments and layout do not hide a copy. Passages found in the starter "
      << "(labs/" << html_escaped(lab.lab->dir) << "/) were left out first; inside a shared passage they are "
      << "grey. A shared percentage is how much of "
      << "one submission's remaining code is also in the other's; pairs are ranked by the larger of the two. "
      << "Similar code is a reason to look, not a verdict.</p>\n";
  if (!lab.left_out.empty()) {
    out << "<p class=\"note\">Not compared (" << lab.left_out.size() << "):</p><ul class=\"note\">";
    for (const std::string& why : lab.left_out) out << "<li>" << html_escaped(why) << "</li>";
    out << "</ul>\n";
  }
  if (lab.pairs.empty()) {
    out << "<p>No two submissions share a passage long enough for sim_c++ to report.</p></main></body></html>\n";
    return out.str();
  }
  out << "<table><tr><th>rank</th><th>pair</th><th>shared (first, second)</th><th>tokens</th><th>passages</th></tr>\n";
  for (std::size_t i = 0; i < std::min(lab.pairs.size(), pairs_in_table); ++i) {
    const SimilarPair& pair = lab.pairs[i];
    const std::string names = lab.copies[pair.first].who + " and " + lab.copies[pair.second].who;
    out << "<tr><td class=\"num\">" << i + 1 << "</td><td>"
        << (i < pairs_shown_in_full ? "<a href=\"#pair-" + std::to_string(i + 1) + "\">" + html_escaped(names) + "</a>"
                                    : html_escaped(names))
        << "</td><td class=\"num\">" << percent_text(pair.first_percent) << ", " << percent_text(pair.second_percent)
        << "</td><td class=\"num\">" << pair.tokens << "</td><td class=\"num\">" << pair.passages.size()
        << "</td></tr>\n";
  }
  out << "</table>\n";
  if (lab.pairs.size() > pairs_in_table)
    out << "<p class=\"note\">The first " << pairs_in_table << " of " << lab.pairs.size()
        << " pairs; the CSV beside this file lists every pair.</p>\n";
  if (lab.pairs.size() > pairs_shown_in_full)
    out << "<p class=\"note\">The passages of the first " << pairs_shown_in_full << " pairs follow.</p>\n";
  for (std::size_t i = 0; i < std::min(lab.pairs.size(), pairs_shown_in_full); ++i) {
    const SimilarPair& pair = lab.pairs[i];
    out << "<h2 id=\"pair-" << i + 1 << "\">" << i + 1 << ". " << html_escaped(pair_title(lab, pair)) << "</h2>\n";
    for (const SharedPassage& passage : pair.passages)
      out << "<div class=\"passage\">"
          << passage_side(lab.copies[pair.first], passage.first_from, passage.first_to, passage.tokens)
          << passage_side(lab.copies[pair.second], passage.second_from, passage.second_to, passage.tokens)
          << "</div>\n";
  }
  out << "</main></body></html>\n";
  return out.str();
}

std::string similarity_summary(const LabSimilarity& lab, std::size_t pairs_named) {
  std::ostringstream out;
  out << "lab " << lab.lab->id << " " << lab.lab->name << ": " << counted(lab.copies.size(), "submission")
      << " compared, " << lab.left_out.size() << " left out (no files, or files refused); "
      << counted(lab.pairs.size(), "pair") << " sharing code\n";
  for (std::size_t i = 0; i < std::min(pairs_named, lab.pairs.size()); ++i) {
    const SimilarPair& pair = lab.pairs[i];
    out << "  " << i + 1 << ". " << pair_title(lab, pair) << " (" << counted(std::size_t(pair.tokens), "token")
        << " in " << counted(pair.passages.size(), "passage") << ")\n";
  }
  return out.str();
}

}  // namespace grade
