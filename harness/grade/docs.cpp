#include "docs.h"

#include "bad_input.h"
#include "model.h"
#include "policy.h"
#include "text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace grade::docs {

namespace {

// ---- Names: how a table calls a lab and its versions

struct VersionNames {
  std::string lab;                                // "dot product"
  std::map<std::string, std::string> by_tier;     // "chapter" -> "the chapter's shared-memory kernel"
};

VersionNames names_of(const std::string& source_root, const LabSpec& lab) {
  VersionNames names{lab.name, {{"starter", "the starter"},
                                {"chapter", "the chapter's technique"},
                                {"reference", "the reference solution"}}};
  std::replace(names.lab.begin(), names.lab.end(), '-', ' ');
  const fs::path file = fs::path(source_root) / version_names_file;
  if (!fs::exists(file)) return names;
  const YAML::Node entry = YAML::LoadFile(file.string())[lab.id];
  if (!entry) return names;
  if (entry["name"]) names.lab = entry["name"].as<std::string>();
  for (const char* tier : policy::tiers)
    if (entry[tier]) names.by_tier[tier] = entry[tier].as<std::string>();
  return names;
}

std::string version_cell(const std::string& source_root, const LabSpec& lab, const VersionNames& names,
                         const std::string& tier) {
  std::string cell = names.by_tier.at(tier);
  // The chapter version's files, for a reader who wants to see what earns that much.
  const fs::path chapter = fs::path("grading") / "policy" / "chapter" / lab.dir;
  if (tier == "chapter" && fs::is_directory(fs::path(source_root) / chapter))
    cell += " (`" + chapter.string() + "/`)";
  return cell;
}

// ---- Figures, as the kit's reports give them

std::string ratio_text(double ratio) { return format(ratio >= 10 ? "%.1f" : "%.3f", ratio); }

std::string hundredths_text(long long hundredths) { return points_figure(double(hundredths) / 100); }

bool timed(const CaseResult& c) { return c.kind == "performance" && c.timing.is_object() && c.timing.contains("ratio"); }

struct Row {
  std::string correctness, speed, total;
};

Row row_of(const LabResult& scored) {
  const std::vector<CaseShare> shares = case_shares(scored);
  long long correctness = 0;
  std::size_t cases = 0, passed = 0;
  std::vector<std::string> ratios, points;
  bool any_timed = false;
  for (std::size_t i = 0; i < scored.cases.size(); ++i) {
    const CaseResult& c = scored.cases[i];
    if (c.kind == "correctness") {
      correctness += shares[i].score;
      ++cases;
      passed += c.passed();
      continue;
    }
    any_timed = any_timed || timed(c);
    ratios.push_back(timed(c) ? ratio_text(c.timing["ratio"].get<double>()) : "not timed");
    points.push_back(hundredths_text(shares[i].score));
  }
  Row row;
  row.correctness = hundredths_text(correctness);
  if (passed < cases) row.correctness += " (" + std::to_string(passed) + " of " + std::to_string(cases) + " cases)";
  if (ratios.empty())
    row.speed = "no timed cases";
  else if (!any_timed)
    row.speed = passed < cases ? "not timed: correctness cases fail" : "not timed";
  else
    row.speed = joined(ratios, ", ") + " → " + joined(points, " + ");
  row.total = points_figure(lab_points(scored));
  return row;
}

// ---- Where the records were graded

// "one NVIDIA H100 80GB HBM3", "2 x NVIDIA H100 80GB HBM3": the GPUs a lab's records ran on,
// the first run's first (the tiers come before the steps), then any other as "some versions".
std::string machine_of(const LabSpec& lab, const std::vector<LabResult>& runs) {
  std::vector<std::string> names;
  for (const LabResult& run : runs) {
    const std::string name = run.device.is_object() ? run.device.value("name", "") : "";
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.empty()) return "";
  const std::string count = lab.min_gpus > 1 ? std::to_string(lab.min_gpus) + " x " : std::string("one ");
  if (names.size() == 1) return count + names.front();
  const std::vector<std::string> others(names.begin() + 1, names.end());
  return count + names.front() + ", some versions on " + count + joined(others, " and ");
}

struct RecordedStep {
  policy::Step step;
  LabResult scored;
};

struct LabTiers {
  const LabSpec* lab = nullptr;
  std::map<std::string, LabResult> scored;  // by tier; a tier never recorded is absent
  std::vector<RecordedStep> steps;          // versions.yaml's order; a step never recorded is absent
  std::string machine;
};

LabTiers tiers_of(const std::string& source_root, const LabSpec& lab) {
  LabTiers tiers{&lab};
  std::vector<LabResult> runs;
  for (const char* tier : policy::tiers) {
    const auto recorded = policy::recorded_run(source_root, tier, lab);
    // A record made before a part's cases were added is shown as not recorded until it is again.
    if (!recorded || !policy::cases_awaiting_record(lab, *recorded).empty()) continue;
    if (const std::string mismatch = policy::record_mismatch(lab, *recorded); !mismatch.empty())
      throw std::runtime_error("lab " + lab.id + ", " + tier + ": " + mismatch);
    tiers.scored.emplace(tier, policy::rescored(lab, *recorded));
    runs.push_back(*recorded);
  }
  for (const policy::Step& step : policy::steps_of(source_root, lab)) {
    const auto recorded = policy::recorded_step(source_root, lab, step);
    if (!recorded || !policy::cases_awaiting_record(lab, *recorded).empty()) continue;
    if (const std::string mismatch = policy::record_mismatch(lab, *recorded); !mismatch.empty())
      throw std::runtime_error("lab " + lab.id + ", step " + step.slug + ": " + mismatch);
    tiers.steps.push_back({step, policy::rescored(lab, *recorded)});
    runs.push_back(*recorded);
  }
  tiers.machine = machine_of(lab, runs);
  return tiers;
}

// A step's cell: its name and its files.
std::string step_cell(const LabSpec& lab, const policy::Step& step) {
  const fs::path folder = fs::path(policy::steps_folder) / lab.dir / step.slug;
  return step.name + " (`" + folder.string() + "/`)";
}

// A paragraph folded at the READMEs' width, between words.
std::string folded(const std::string& paragraph, std::size_t width = 96) {
  std::istringstream words(paragraph);
  std::string text, line;
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      text += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return text + line;
}

// ---- The blocks

std::string lab_tiers_block(const std::string& source_root, const LabSpec& lab) {
  const LabTiers tiers = tiers_of(source_root, lab);
  const VersionNames names = names_of(source_root, lab);
  std::ostringstream text;
  text << folded("**What each version earns** under this rubric, graded on " +
                 (tiers.machine.empty() ? std::string("a GPU") : tiers.machine) + " (the runs are kept in `" +
                 policy::records_folder + "/`; `grading/policy/README.md` gives the rule they follow):")
       << "\n\n| version | correctness | speed: ratios → points | total |\n"
       << "|---|---:|---|---:|\n";
  const auto write_row = [&](const std::string& version, const LabResult& scored) {
    const Row row = row_of(scored);
    text << "| " << version << " | " << row.correctness << " | " << row.speed << " | **" << row.total << "** |\n";
  };
  // The recorded steps where they stand: those below the chapter after the starter, the
  // chapter's other forms after the chapter.
  const auto write_steps = [&](bool chapter_forms) {
    for (const RecordedStep& recorded : tiers.steps)
      if ((recorded.step.rule == "chapter") == chapter_forms) write_row(step_cell(lab, recorded.step), recorded.scored);
  };
  for (const char* tier : policy::tiers) {
    if (std::string(tier) == "chapter") write_steps(false);
    const std::string version = version_cell(source_root, lab, names, tier);
    const auto found = tiers.scored.find(tier);
    if (found == tiers.scored.end())
      text << "| " << version << " | not recorded | | |\n";
    else
      write_row(version, found->second);
    if (std::string(tier) == "chapter") write_steps(true);
  }
  // A step this GPU does not rank where the lesson would (an unranked step above the chapter,
  // say) needs its reason beside the table, or the table reads as the rubric's mistake.
  for (const RecordedStep& recorded : tiers.steps)
    if (recorded.step.rule == "unranked")
      text << "\n" << folded("Not ranked against the chapter: " + recorded.step.name + ". " + recorded.step.why) << "\n";
  return text.str();
}

std::string all_tiers_block(const std::string& source_root, const std::vector<LabSpec>& catalog) {
  std::map<std::string, std::vector<std::string>> labs_by_machine;
  std::vector<LabTiers> labs;
  for (const LabSpec& lab : catalog) labs.push_back(tiers_of(source_root, lab));
  // Once any step is recorded, two columns for them, each with its totals in versions.yaml's
  // order: the steps below the chapter before it, the chapter's other forms after it.
  const bool any_step = std::any_of(labs.begin(), labs.end(), [](const LabTiers& t) { return !t.steps.empty(); });
  const auto step_totals = [](const LabTiers& tiers, bool chapter_forms) {
    std::vector<std::string> totals;
    for (const RecordedStep& recorded : tiers.steps)
      if ((recorded.step.rule == "chapter") == chapter_forms) totals.push_back(row_of(recorded.scored).total);
    return joined(totals, ", ");
  };
  std::ostringstream table;
  if (any_step)
    table << "| lab | starter | bug fixed, library, steps | chapter | chapter, other forms | reference |\n"
          << "|---|---:|---:|---:|---:|---:|\n";
  else
    table << "| lab | starter | chapter | reference |\n|---|---:|---:|---:|\n";
  for (const LabTiers& tiers : labs) {
    const LabSpec& lab = *tiers.lab;
    if (!tiers.machine.empty()) labs_by_machine[tiers.machine].push_back(lab.id);
    table << "| " << lab.id << " " << names_of(source_root, lab).lab;
    for (const char* tier : policy::tiers) {
      const bool chapter = std::string(tier) == "chapter";
      if (any_step && chapter) table << " | " << step_totals(tiers, false);
      const auto found = tiers.scored.find(tier);
      table << " | " << (found == tiers.scored.end() ? "not recorded" : row_of(found->second).total);
      if (any_step && chapter) table << " | " << step_totals(tiers, true);
    }
    table << " |\n";
  }
  // The machine most labs ran on, then the others with their labs.
  std::vector<std::pair<std::string, std::vector<std::string>>> machines(labs_by_machine.begin(),
                                                                          labs_by_machine.end());
  std::stable_sort(machines.begin(), machines.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string where = machines.empty() ? "a GPU" : machines.front().first;
  for (std::size_t i = 1; i < machines.size(); ++i) {
    const std::vector<std::string>& ids = machines[i].second;
    where += (i == 1 ? " (" : "; ") + std::string(ids.size() == 1 ? "lab " : "labs ") +
             (ids.size() == 2 ? ids[0] + " and " + ids[1] : id_ranges(ids)) + " on " + machines[i].first;
  }
  if (machines.size() > 1) where += ")";
  return folded("Graded on " + where + ", kept in `" + policy::records_folder +
                "/` and scored under today's rubrics, in which speed points rise with the logarithm of the "
                "ratio (each lab's README has its cases' ratios and points" +
                (any_step ? std::string(", and names its steps, listed in `") + policy::versions_file + "`" : "") +
                "):") +
         "\n\n" + table.str();
}

// ---- Markers

const std::regex open_marker(R"(<!-- labkit:([a-z-]+)( [A-Za-z0-9_-]+)?( [A-Za-z0-9_,-]+)? -->)");

std::string close_marker(const std::string& kind) { return "<!-- /labkit:" + kind + " -->"; }

std::string trimmed(const std::string& line) {
  const std::size_t end = line.find_last_not_of(" \t\r");
  return end == std::string::npos ? "" : line.substr(0, end + 1);
}

}  // namespace

// What lab NN's benchmark printed on the recorded GPU, as saved (docs/benchmarks/NN-name.txt):
// the one home of the numbers a README's "Reference numbers" show.
std::string bench_block(const std::string& source_root, const LabSpec& lab) {
  const fs::path saved = fs::path(benchmarks_folder) / (lab.dir + ".txt");
  std::ifstream in(fs::path(source_root) / saved);
  if (!in) return "Not recorded yet: `" + std::string(record_benchmarks_command) + " " + lab.id + "` on a GPU saves it.";
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return folded("What `build/labs/lab-" + lab.dir + "-bench` printed, as saved in `" + saved.string() + "` (`" +
                record_benchmarks_command + "` saves it again on a GPU):") +
         "\n\n```text\n" + output + (output.empty() || output.back() == '\n' ? "" : "\n") + "```";
}

namespace {

// Whether `name` starts with one of the comma-separated `prefixes` (all do when there are none).
bool named_by(const std::string& name, const std::string& prefixes) {
  if (prefixes.empty()) return true;
  std::istringstream list(prefixes);
  for (std::string prefix; std::getline(list, prefix, ',');)
    if (!prefix.empty() && name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

// Lab NN's timed cases as its lab.yaml scores them: the one home of their points and ratios.
// `case_prefixes` keeps the cases named so (a part's own table); empty, every case.
std::string rubric_block(const LabSpec& lab, const std::string& case_prefixes) {
  double speed_points = 0, shown_points = 0;
  std::vector<const PerformanceRubric*> shown;
  for (const PerformanceRubric& timed : lab.performance) {
    speed_points += timed.points;
    if (named_by(timed.case_name, case_prefixes)) shown.push_back(&timed), shown_points += timed.points;
  }
  if (shown.empty()) throw BadInput("lab " + lab.id + " has no timed case named " + case_prefixes);
  const std::string yaml = "`labs/" + lab.dir + "/lab.yaml`";
  const std::string intro =
      case_prefixes.empty()
          ? "As " + yaml + " scores them: " + points_figure(speed_points) + " points for speed, " +
                points_figure(lab.correctness_points) + " for correctness."
          : "As " + yaml + " scores them: " + points_figure(shown_points) + " of the lab's " +
                points_figure(speed_points) + " points for speed (and " + points_figure(lab.correctness_points) +
                " for correctness, shared equally by the correctness cases of every part).";
  std::string table = folded(intro) +
                      "\n\n| case | what it times | points | no points at or below | full points from | "
                      "doublings of speed between |\n|---|---|---:|---:|---:|---:|";
  for (const PerformanceRubric* shown_case : shown) {
    const PerformanceRubric& timed = *shown_case;
    table += "\n| `" + timed.case_name + "` | " + timed.about + " | " + points_figure(timed.points) + " | " +
             format("%g", timed.zero_credit_ratio) + " | " + format("%g", timed.full_credit_ratio) + " | " +
             format("%.1f", std::log2(timed.full_credit_ratio / timed.zero_credit_ratio)) + " |";
  }
  return table;
}

std::string render_block(const std::string& source_root, const std::vector<LabSpec>& catalog,
                         const std::string& block) {
  const std::size_t space = block.find(' ');
  const std::string kind = block.substr(0, space);
  std::string argument = space == std::string::npos ? "" : block.substr(space + 1), filter;
  if (const std::size_t second = argument.find(' '); second != std::string::npos)
    filter = argument.substr(second + 1), argument = argument.substr(0, second);
  if (!filter.empty() && kind != "rubric") throw BadInput("only a rubric block takes case names: `" + block + "`");
  if (kind == "tiers" && argument == "all") return all_tiers_block(source_root, catalog);
  if (kind == "tiers" || kind == "bench" || kind == "rubric")
    for (const LabSpec& lab : catalog)
      if (lab.id == argument) {
        if (kind == "rubric") return rubric_block(lab, filter);
        return kind == "tiers" ? lab_tiers_block(source_root, lab) : bench_block(source_root, lab);
      }
  throw BadInput("no such block: `" + block +
                 "` (the kit renders `tiers NN`, `bench NN` and `rubric NN [CASE-PREFIX,...]` for a lab, and `tiers all`)");
}

Refreshed refresh_text(const std::string& text, const std::function<std::string(const std::string&)>& render) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const bool ends_in_newline = !text.empty() && text.back() == '\n';

  Refreshed refreshed;
  std::string& out = refreshed.text;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch open;
    const std::string line = trimmed(lines[i]);
    if (!std::regex_match(line, open, open_marker)) {
      out += lines[i] + (i + 1 < lines.size() || ends_in_newline ? "\n" : "");
      continue;
    }
    const std::string kind = open[1].str(), name = kind + open[2].str() + open[3].str();
    std::size_t close = i + 1;
    std::string old_content;
    for (; close < lines.size() && trimmed(lines[close]) != close_marker(kind); ++close) {
      if (std::regex_match(trimmed(lines[close]), open_marker) || trimmed(lines[close]).rfind("<!-- /labkit:", 0) == 0)
        throw std::runtime_error("line " + std::to_string(close + 1) + ": the block `" + name + "` opened on line " +
                                 std::to_string(i + 1) + " is not closed by " + close_marker(kind));
      old_content += lines[close] + "\n";
    }
    if (close == lines.size())
      throw std::runtime_error("line " + std::to_string(i + 1) + ": the block `" + name + "` is never closed (" +
                               close_marker(kind) + ")");
    std::string body = render(name);
    while (!body.empty() && body.back() == '\n') body.pop_back();
    const std::string new_content = "\n" + body + "\n\n";
    refreshed.blocks.push_back(name);
    if (new_content != old_content) refreshed.stale.push_back(name);
    out += lines[i] + "\n" + new_content + lines[close] + (close + 1 < lines.size() || ends_in_newline ? "\n" : "");
    i = close;
  }
  return refreshed;
}

std::vector<FileBlocks> render_all(const std::string& source_root, const std::vector<LabSpec>& catalog) {
  const fs::path root(source_root);
  std::vector<fs::path> files = {"README.md"};
  for (const char* folder : {"labs", "grading", "docs"}) {
    if (!fs::is_directory(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder))
      if (entry.is_regular_file() && entry.path().extension() == ".md")
        files.push_back(fs::relative(entry.path(), root));
  }
  std::sort(files.begin() + 1, files.end());
  // A block renders the same wherever it stands: render each once.
  std::map<std::string, std::string> rendered;
  const auto render = [&](const std::string& block) {
    auto found = rendered.find(block);
    if (found == rendered.end()) found = rendered.emplace(block, render_block(source_root, catalog, block)).first;
    return found->second;
  };
  std::vector<FileBlocks> result;
  for (const fs::path& file : files) {
    std::ifstream in(root / file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("<!-- labkit:") == std::string::npos) continue;
    try {
      result.push_back({file, refresh_text(text, render)});
    } catch (const std::invalid_argument& error) {
      throw BadInput(file.string() + ": " + error.what());
    } catch (const std::exception& error) {
      throw std::runtime_error(file.string() + ": " + error.what());
    }
  }
  return result;
}

int write_all(const std::string& source_root, const std::vector<LabSpec>& catalog) {
  std::size_t blocks = 0, written = 0;
  for (const FileBlocks& file : render_all(source_root, catalog)) {
    blocks += file.refreshed.blocks.size();
    if (file.refreshed.stale.empty()) continue;
    std::ofstream out(fs::path(source_root) / file.file, std::ios::binary | std::ios::trunc);
    out << file.refreshed.text;
    if (!out) throw std::runtime_error("cannot write " + file.file.string());
    ++written;
    std::cout << "rendered " << file.file.string() << ": " << joined(file.refreshed.stale, ", ") << "\n";
  }
  std::cout << blocks << " blocks from the records (" << policy::records_folder << "/), the saved benchmarks and the rubrics, "
            << (written == 0 ? std::string("all up to date") : std::to_string(written) + " files rewritten") << "\n";
  return 0;
}

}  // namespace grade::docs
