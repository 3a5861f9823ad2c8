#include "model.h"

#include "labkit/exit_status.h"
#include "labkit/protocol.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <regex>

using nlohmann::json;

namespace grade {

std::string to_string(LabStatus status) {
  switch (status) {
    case LabStatus::graded: return "graded";
    case LabStatus::build_failed: return "build failed";
    case LabStatus::forbidden: return "forbidden library";
    case LabStatus::missing_files: return "missing files";
    case LabStatus::run_failed: return "run failed";
    case LabStatus::not_run: return "not run";
    case LabStatus::kit_fault: return "kit fault";
  }
  return "unknown";
}

void add_totals(LabResult& lab) {
  lab.points = lab.max_points = 0;
  for (const CaseResult& c : lab.cases) {
    lab.points += c.points;
    lab.max_points += c.max_points;
  }
}

void add_totals(Report& report) {
  report.points = report.max_points = 0;
  for (const LabResult& lab : report.labs) {
    report.points += lab.points;
    report.max_points += lab.max_points;
  }
}

bool judged_here(const LabResult& lab) {
  return lab.status != LabStatus::not_run && lab.status != LabStatus::kit_fault;
}

namespace {

// Shares of `total` hundredths in proportion to `weights`: each rounded down, the hundredths
// left over to the largest remainders, so that they add up to `total` exactly.
std::vector<long long> hundredths_adding_up(const std::vector<double>& weights, long long total) {
  const double weight_sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<long long> shares(weights.size(), 0);
  if (weight_sum <= 0) return shares;
  std::vector<std::pair<double, std::size_t>> remainders;
  long long given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double exact = double(total) * weights[i] / weight_sum;
    shares[i] = static_cast<long long>(std::floor(exact + 1e-9));
    given += shares[i];
    remainders.push_back({exact - double(shares[i]), i});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < total && k < remainders.size(); ++k, ++given) ++shares[remainders[k].second];
  return shares;
}

long long to_hundredths(double points) { return std::llround(points * 100); }

// A case's points in hundredths of its share: full marks are the whole share, never a hundredth short.
long long share_score(const CaseResult& c, long long max_hundredths) {
  if (c.max_points > 0 && c.points >= c.max_points - 1e-9) return max_hundredths;
  return std::clamp(to_hundredths(c.points), 0LL, max_hundredths);
}

long long lab_hundredths(const LabResult& lab) {
  long long sum = 0;
  for (const CaseShare& share : case_shares(lab)) sum += share.score;
  return sum;
}

}  // namespace

std::vector<CaseShare> case_shares(const LabResult& lab) {
  std::vector<double> weights;
  for (const CaseResult& c : lab.cases) weights.push_back(c.max_points);
  const std::vector<long long> maxima = hundredths_adding_up(weights, to_hundredths(lab.max_points));
  std::vector<CaseShare> shares;
  for (std::size_t i = 0; i < lab.cases.size(); ++i) shares.push_back({share_score(lab.cases[i], maxima[i]), maxima[i]});
  return shares;
}

double lab_points(const LabResult& lab) { return double(lab_hundredths(lab)) / 100; }

Total total_of(const std::vector<const LabResult*>& labs) {
  long long points = 0, max_points = 0;
  Total total;
  for (const LabResult* lab : labs) {
    points += lab_hundredths(*lab);
    max_points += to_hundredths(lab->max_points);
    total.labs_not_judged += !judged_here(*lab);
  }
  total.points = double(points) / 100;
  total.max_points = double(max_points) / 100;
  return total;
}

Total total_of(const Report& report) {
  std::vector<const LabResult*> labs;
  for (const LabResult& lab : report.labs) labs.push_back(&lab);
  return total_of(labs);
}

std::string points_figure(double points) {
  std::string text = format("%.2f", double(to_hundredths(points)) / 100);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text == "-0" ? "0" : text;
}

std::string points_line(const LabResult& lab) {
  if (!judged_here(lab)) return "not judged here (" + points_figure(lab.max_points) + " points)";
  return points_figure(lab_points(lab)) + " / " + points_figure(lab.max_points) + " points";
}

std::string points_line(const Total& total) {
  if (total.judged()) return points_figure(total.points) + " / " + points_figure(total.max_points) + " points";
  const std::string labs = std::to_string(total.labs_not_judged) + (total.labs_not_judged == 1 ? " lab" : " labs");
  return "not known: " + labs + " not judged here (" + points_figure(total.max_points) + " points in all)";
}

std::string share_text(const CaseShare& share) {
  return points_figure(double(share.score) / 100) + " / " + points_figure(double(share.max) / 100);
}

std::string not_graded_reason(const LabResult& lab) {
  if (lab.status == LabStatus::graded) return {};
  if (lab.status == LabStatus::build_failed || lab.note.empty()) return to_string(lab.status);
  return lab.note;
}

// A hidden case shows its verdict but not its inputs or the expected values.
std::string visible_message(const CaseResult& c, bool show_hidden_details) {
  if (!c.hidden || show_hidden_details || c.passed()) return c.message;
  return "hidden case: details are withheld";
}

// Fewer cases with one hint read as well listed one by one.
constexpr std::size_t min_cases_sharing_a_hint = 3;

namespace {

bool part_of_a_name(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The length of the number that starts at `at` ("-12", "3.25", "1e-5"), or 0 when none does.
std::size_t number_length(const std::string& text, std::size_t at) {
  if (at > 0 && (part_of_a_name(text[at - 1]) || text[at - 1] == '.')) return 0;
  std::size_t end = at;
  if (text[end] == '-' && end + 1 < text.size() && digit(text[end + 1])) ++end;
  if (end >= text.size() || !digit(text[end])) return 0;
  while (end < text.size() && digit(text[end])) ++end;
  if (end + 1 < text.size() && text[end] == '.' && digit(text[end + 1]))
    for (++end; end < text.size() && digit(text[end]);) ++end;
  if (end + 1 < text.size() && (text[end] == 'e' || text[end] == 'E')) {
    std::size_t exponent = end + 1;
    if (exponent < text.size() && (text[exponent] == '-' || text[exponent] == '+')) ++exponent;
    if (exponent < text.size() && digit(text[exponent]))
      for (end = exponent; end < text.size() && digit(text[end]);) ++end;
  }
  if (end < text.size() && part_of_a_name(text[end])) return 0;  // "4th", "3x3": part of a word
  return end - at;
}

// What hints that say the same thing have in common: the hint without its numbers, and
// without a comparison's "N of M values differ: ..." (labkit/compare.h), whose values are each
// case's own data, as many as it has (a case whose checks found no wrong value has none).
std::string hint_shape(const std::string& hint) {
  static const std::regex comparison(R"([.;:,]?\s*\d+ of \d+ values differ.*$)");
  return without_numbers(std::regex_replace(hint, comparison, ""));
}

}  // namespace

std::string without_numbers(const std::string& hint) {
  std::string kept;
  for (std::size_t at = 0; at < hint.size();) {
    if (const std::size_t length = number_length(hint, at); length > 0) {
      kept += '#';
      at += length;
    } else {
      kept += hint[at++];
    }
  }
  return kept;
}

std::vector<SharedHint> shared_hints(const LabResult& lab, bool show_hidden_details, HintMatch match) {
  std::vector<SharedHint> shared;
  std::vector<std::string> keys;  // per entry of `shared`: what its cases' hints have in common
  for (const CaseResult& c : lab.cases) {
    if (c.kind != "correctness" || c.passed()) continue;
    const std::string hint = visible_message(c, show_hidden_details);
    if (hint.empty()) continue;
    const std::string key = (c.ran() ? "ran " : "not run ") +
                            (match == HintMatch::same_but_numbers ? hint_shape(hint) : hint);
    const std::size_t same = std::size_t(std::find(keys.begin(), keys.end(), key) - keys.begin());
    if (same == keys.size()) {
      shared.push_back({hint, c.ran(), {c.name}});
      keys.push_back(key);
    } else {
      shared[same].cases.push_back(c.name);
      shared[same].numbers_differ = shared[same].numbers_differ || hint != shared[same].hint;
    }
  }
  shared.erase(std::remove_if(shared.begin(), shared.end(),
                              [](const SharedHint& s) { return s.cases.size() < min_cases_sharing_a_hint; }),
               shared.end());
  return shared;
}

bool in_shared_hint(const std::vector<SharedHint>& shared, const std::string& case_name) {
  return std::any_of(shared.begin(), shared.end(), [&](const SharedHint& s) {
    return std::find(s.cases.begin(), s.cases.end(), case_name) != s.cases.end();
  });
}

std::string case_list(const SharedHint& shared) {
  constexpr std::size_t named_in_full = 6, named_when_longer = 5;
  const std::size_t count = shared.cases.size();
  const std::size_t named = count <= named_in_full ? count : named_when_longer;
  std::string list;
  for (std::size_t i = 0; i < named; ++i) list += (i ? ", " : "") + shared.cases[i];
  if (named < count) list += " and " + std::to_string(count - named) + " more";
  return list + " (" + std::to_string(count) + " cases)";
}

std::optional<LibraryTime> library_time(const CaseResult& c) {
  if (!c.timing.is_object() || !c.timing.contains("anchor")) return std::nullopt;
  const json& anchor = c.timing["anchor"];
  if (!anchor.is_object() || !anchor.contains("median_ms") || !anchor["median_ms"].is_number()) return std::nullopt;
  const double median_ms = anchor["median_ms"].get<double>();
  if (!(median_ms > 0)) return std::nullopt;
  const bool named = anchor.contains("name") && anchor["name"].is_string();
  return LibraryTime{named ? anchor["name"].get<std::string>() : "library", median_ms};
}

std::string json_text(const json& value, int indent) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

namespace exit_status = labkit::protocol::exit_status;

bool part_did_not_compile(const LabResult& lab) { return lab.build_log.find(part_not_compiled) != std::string::npos; }

// A case that could not run (a lab on a machine without a GPU, a case that needs MPI) is not a
// failure: with nothing failed, it makes the status "not run".
int exit_status_of(const Report& report) {
  for (const LabResult& lab : report.labs)  // whatever else happened: the kit's verdicts are not to be trusted
    if (lab.status == LabStatus::kit_fault) return exit_status::kit_fault;
  bool not_run = false;
  for (const LabResult& lab : report.labs) {
    if (part_did_not_compile(lab)) return exit_status::failed;
    if (lab.status == LabStatus::not_run) {
      not_run = true;
      continue;
    }
    if (lab.status != LabStatus::graded) return exit_status::failed;
    for (const CaseResult& c : lab.cases) {
      if (c.failed()) return exit_status::failed;
      not_run = not_run || !c.ran();
    }
  }
  return not_run ? exit_status::not_run : exit_status::ok;
}

// A student's build error, wrong answer or missing lab is the gradebook's business, not the
// batch's: only a lab-submission the kit could not judge changes the status.
int batch_exit_status(const std::vector<Report>& reports) {
  bool not_run = false;
  for (const Report& report : reports)
    for (const LabResult& lab : report.labs) {
      if (lab.status == LabStatus::kit_fault) return exit_status::kit_fault;
      not_run = not_run || lab.status == LabStatus::not_run;
    }
  return not_run ? exit_status::not_run : exit_status::ok;
}

std::string format(const char* pattern, double a, double b, double c, double d) {
  const int length = std::snprintf(nullptr, 0, pattern, a, b, c, d);
  if (length <= 0) return {};
  std::string text(std::size_t(length) + 1, '\0');
  std::snprintf(text.data(), text.size(), pattern, a, b, c, d);
  text.pop_back();
  return text;
}

std::string timing_line(const CaseResult& c) {
  if (!c.timing.contains("student")) return {};
  const json& s = c.timing["student"];
  const json& r = c.timing["reference"];
  std::string line = format("yours %.4f ms, ", s["median_ms"].get<double>()) +
                     labkit::protocol::throughput(c.timing, s).text() +
                     format("; reference %.4f ms; ", r["median_ms"].get<double>());
  if (const auto library = library_time(c)) line += library->name + format(" %.4f ms; ", library->median_ms);
  return line + format("ratio %.2f", c.timing["ratio"].get<double>());
}

std::string SanitizerFinding::describe() const {
  std::string text = tool + ": " + what;
  if (!file.empty()) text += " at " + file + ":" + std::to_string(line);
  if (!also_at.empty()) text += " (and " + also_at + ")";
  if (!kernel.empty()) text += ", in " + kernel;
  if (!thread.empty()) text += ", " + thread;
  return text;
}

json to_json(const SanitizerRun& run) {
  json findings = json::array();
  for (const SanitizerFinding& f : run.findings)
    findings.push_back({{"tool", f.tool}, {"what", f.what}, {"file", f.file}, {"line", f.line},
                        {"also_at", f.also_at}, {"kernel", f.kernel}, {"thread", f.thread},
                        {"text", f.describe()}});
  return {{"tool", run.tool}, {"cases", run.cases}, {"findings", findings},
          {"errors_reported", run.errors_reported}, {"kit_findings", run.kit_findings},
          {"tool_problem", run.tool_problem}};
}

SanitizerRun sanitizer_run_from_json(const json& j) {
  SanitizerRun run{j.value("tool", ""), j.value("cases", std::vector<std::string>{})};
  for (const json& f : j.value("findings", json::array()))
    run.findings.push_back({f.value("tool", ""), f.value("what", ""), f.value("file", ""), f.value("line", 0),
                            f.value("also_at", ""), f.value("kernel", ""), f.value("thread", "")});
  run.errors_reported = j.value("errors_reported", 0);
  run.kit_findings = j.value("kit_findings", 0);
  run.tool_problem = j.value("tool_problem", "");
  return run;
}

std::vector<std::string> sanitizer_lines(const LabResult& lab) {
  std::vector<std::string> lines;
  for (const SanitizerRun& run : lab.sanitizer) {
    for (const SanitizerFinding& finding : run.findings) lines.push_back(finding.describe());
    if (!run.tool_problem.empty()) {
      lines.push_back(run.tool + ": the tool itself failed (" + run.tool_problem +
                      "): not a fault of your code, and it costs you nothing");
      continue;
    }
    const int more = run.errors_reported - int(run.findings.size()) - run.kit_findings;
    if (!run.findings.empty() && more > 0)
      lines.push_back(run.tool + ": and " + std::to_string(more) + " more report(s) like these");
    if (run.findings.empty())
      lines.push_back(run.tool + ": nothing found" +
                      (run.kit_findings > 0 ? " in your code (" + std::to_string(run.kit_findings) +
                                                  " report(s) in the kit's own files left out)"
                                            : std::string()));
  }
  return lines;
}

std::string sanitizer_cases(const LabResult& lab) {
  std::string cases;
  if (!lab.sanitizer.empty())
    for (const std::string& name : lab.sanitizer.front().cases) cases += (cases.empty() ? "" : ", ") + name;
  return cases;
}

// A lab's maximum to a millionth: cases' shares of it add up to 59.999999999999986 in binary,
// which a script reading the JSON should not see. The lab's points are its figure
// (lab_points), null where it was not judged here; each case keeps its exact points, so that
// totals made again from saved cases (a resumed batch, Slurm's collect) come out the same.
static double rounded(double points) { return std::round(points * 1e6) / 1e6; }

json to_json(const LabResult& lab) {
  json cases = json::array();
  for (const CaseResult& c : lab.cases)
    cases.push_back({{"name", c.name}, {"kind", c.kind}, {"hidden", c.hidden}, {"ran", c.ran()},
                     {"passed", c.passed()}, {"outcome", labkit::protocol::to_string(c.outcome)},
                     {"message", c.message}, {"points", c.points},
                     {"max_points", c.max_points}, {"timing", c.timing}});
  json sanitizer = json::array();
  for (const SanitizerRun& run : lab.sanitizer) sanitizer.push_back(to_json(run));
  return {{"id", lab.id}, {"name", lab.name}, {"title", lab.title}, {"status", to_string(lab.status)},
          {"note", lab.note}, {"build_log", lab.build_log}, {"run_log", lab.run_log}, {"device", lab.device},
          {"points", judged_here(lab) ? json(lab_points(lab)) : json(nullptr)}, {"max_points", rounded(lab.max_points)},
          {"cases", cases},
          {"sanitizer", sanitizer}};
}

// Results saved before cases had an outcome say only whether the case ran and passed.
static Outcome outcome_from_json(const json& c) {
  if (const auto outcome = labkit::protocol::outcome_from_string(c.value("outcome", ""))) return *outcome;
  return c.at("passed").get<bool>() ? Outcome::passed : c.at("ran").get<bool>() ? Outcome::failed : Outcome::not_run;
}

LabResult lab_from_json(const json& j) {
  LabResult lab{j.at("id"), j.at("name"), j.at("title")};
  const std::string status = j.at("status");
  for (LabStatus s : {LabStatus::graded, LabStatus::build_failed, LabStatus::forbidden, LabStatus::missing_files,
                      LabStatus::run_failed, LabStatus::not_run, LabStatus::kit_fault})
    if (to_string(s) == status) lab.status = s;
  lab.note = j.at("note");
  lab.build_log = j.at("build_log");
  lab.run_log = j.at("run_log");
  lab.device = j.at("device");
  for (const json& c : j.at("cases"))
    lab.cases.push_back({c.at("name"), c.at("kind"), c.at("hidden"), outcome_from_json(c), c.at("message"),
                         c.at("points"), c.at("max_points"), c.at("timing")});
  for (const json& run : j.value("sanitizer", json::array())) lab.sanitizer.push_back(sanitizer_run_from_json(run));
  add_totals(lab);
  return lab;
}

json to_json(const Report& report) {
  json labs = json::array();
  for (const LabResult& lab : report.labs) labs.push_back(to_json(lab));
  const Total total = total_of(report);
  return {{"who", report.who}, {"mode", report.mode}, {"points", total.judged() ? json(total.points) : json(nullptr)},
          {"max_points", total.max_points}, {"secret_used", report.secret_used}, {"labs", labs}};
}

std::string none_ran(const LabResult& lab) {
  const bool some_ran = std::any_of(lab.cases.begin(), lab.cases.end(), [](const CaseResult& c) { return c.ran(); });
  if (some_ran || lab.cases.empty()) return "";
  return format("none of its %.0f cases ran (%.0f points)", double(lab.cases.size()), lab.max_points);
}

}  // namespace grade
