#include "expect.h"

#include "bad_input.h"

#include "labkit/defences.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>

namespace fs = std::filesystem;

namespace grade {

namespace {

std::size_t passed_correctness(const LabResult& lab, std::size_t& total) {
  std::size_t passed = 0;
  total = 0;
  for (const CaseResult& c : lab.cases)
    if (c.kind == "correctness") ++total, passed += c.passed();
  return passed;
}

std::string points_text(double points) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", points);
  return text;
}

bool mentions(const LabResult& lab, const std::string& text) {
  if (lab.note.find(text) != std::string::npos || lab.build_log.find(text) != std::string::npos) return true;
  for (const CaseResult& c : lab.cases)
    if (c.message.find(text) != std::string::npos) return true;
  return false;
}

// Every way `lab` differs from `expected`, as readable lines.
std::vector<std::string> differences(const LabResult& lab, const YAML::Node& expected) {
  std::vector<std::string> found;
  const std::string status = expected["status"].as<std::string>("graded");
  if (to_string(lab.status) != status)
    found.push_back("status is '" + to_string(lab.status) + "', expected '" + status + "' (" + lab.note + ")");
  if (expected["correctness"]) {
    std::size_t total = 0;
    const std::size_t passed = passed_correctness(lab, total);
    const std::string want = expected["correctness"].as<std::string>();
    const std::string got = passed == total ? "all" : passed == 0 ? "none" : "some";
    if (got != want)
      found.push_back("correctness: " + std::to_string(passed) + " of " + std::to_string(total) +
                      " passed, expected " + want);
  }
  if (expected["points_at_most"] && lab.points > expected["points_at_most"].as<double>() + 1e-9)
    found.push_back("scored " + points_text(lab.points) + ", expected at most " +
                    expected["points_at_most"].as<std::string>());
  if (expected["points_at_least"] && lab.points < expected["points_at_least"].as<double>() - 1e-9)
    found.push_back("scored " + points_text(lab.points) + ", expected at least " +
                    expected["points_at_least"].as<std::string>());
  if (expected["message"] && !mentions(lab, expected["message"].as<std::string>()))
    found.push_back("no message mentions '" + expected["message"].as<std::string>() + "'");
  return found;
}

// The problems of one expected.yaml that would make its check vacuous; empty when none.
std::vector<std::string> file_problems(const fs::path& file, const YAML::Node& labs,
                                       const std::vector<std::string>& known_labs) {
  std::vector<std::string> problems;
  if (!labs || !labs.IsMap() || labs.size() == 0) {
    problems.push_back(file.string() + " names no lab under `labs:`: nothing would be checked");
    return problems;
  }
  std::string known;
  for (const std::string& id : known_labs) known += (known.empty() ? "" : ", ") + id;
  for (const auto& entry : labs) {
    const std::string key = entry.first.as<std::string>();
    if (std::find(known_labs.begin(), known_labs.end(), key) == known_labs.end())
      problems.push_back(file.string() + " names lab \"" + key + "\", which the grader does not know (its labs: " +
                         known + "; quote the key, as in \"01\")");
  }
  return problems;
}

// An entry that hands in the kit's starters or references hands in every lab, so it must say
// what each lab of the catalog earns: a lab it leaves out would be graded and never checked.
std::vector<std::string> unexpected_labs(const fs::path& file, const YAML::Node& root,
                                         const std::vector<std::string>& known_labs) {
  const YAML::Node files = root["files"];
  if (!files || !files.IsScalar()) return {};
  const std::string kind = files.as<std::string>();
  if (kind != "starter" && kind != "reference") return {};
  std::string missing;
  for (const std::string& id : known_labs)
    if (!root["labs"] || !root["labs"][id]) missing += (missing.empty() ? "" : ", ") + id;
  if (missing.empty()) return {};
  return {file.string() + " hands in the kit's " + kind + " files of every lab but expects nothing of lab(s) " +
          missing + ": add what each earns under `labs:` (the lab's records in grading/policy/ say it)"};
}

}  // namespace

std::vector<std::string> expectation_problems(const std::string& expected_file,
                                              const std::vector<std::string>& known_labs) {
  const YAML::Node root = YAML::LoadFile(expected_file);
  std::vector<std::string> problems = file_problems(expected_file, root["labs"], known_labs);
  if (!problems.empty()) return problems;
  return unexpected_labs(expected_file, root, known_labs);
}

namespace {

// Where the kit keeps each kind of a lab's files: labs/*/ (the starter), solutions/*/ (the
// reference), grading/policy/chapter/*/ (the chapter's technique, as its tier was recorded)
// and grading/policy/steps/*/STEP/ (`step STEP`: a step of the policy, as it was recorded).
// Returns the folder of the labs' folders and the part below each lab's folder.
std::pair<fs::path, fs::path> kit_folder(const std::string& source_root, const std::string& kind) {
  const fs::path policy = fs::path(source_root) / "grading" / "policy";
  if (kind == "starter") return {fs::path(source_root) / "labs", ""};
  if (kind == "reference") return {fs::path(source_root) / "solutions", ""};
  if (kind == "chapter") return {policy / "chapter", ""};
  if (const std::string step = "step "; kind.rfind(step, 0) == 0 && kind.size() > step.size())
    return {policy / "steps", kind.substr(step.size())};
  return {};
}

// The kit's copy of a lab's file NAME of that kind.
fs::path kit_file(const std::string& source_root, const std::string& name, const std::string& kind,
                  const fs::path& expected_file) {
  const auto [folder, below_lab] = kit_folder(source_root, kind);
  if (folder.empty())
    throw BadInput(expected_file.string() + " takes " + name + " from `" + kind +
                   "`; the kit's files are `starter`, `reference`, `chapter` or `step NAME`");
  std::error_code absent;
  for (const auto& lab : fs::directory_iterator(folder, absent))
    if (fs::is_regular_file(lab.path() / below_lab / name)) return lab.path() / below_lab / name;
  throw BadInput(expected_file.string() + " takes " + name + " from the kit, which has no such file");
}

// The entry's own files and the kit's named ones, together in a folder of their own.
std::string stage_with_kit_parts(const Submission& s, const YAML::Node& parts, const std::string& source_root,
                                 const fs::path& staging, const fs::path& expected_file) {
  const fs::path folder = staging / s.who;
  fs::remove_all(folder);
  fs::create_directories(folder);
  for (const auto& own : fs::directory_iterator(s.base))
    if (own.is_regular_file()) fs::copy_file(own.path(), folder / own.path().filename());
  for (const auto& part : parts) {
    const std::string name = part.first.as<std::string>();
    fs::copy_file(kit_file(source_root, name, part.second.as<std::string>(), expected_file), folder / name,
                  fs::copy_options::overwrite_existing);
  }
  return folder.string();
}

}  // namespace

void use_kit_files(std::vector<Submission>& submissions, const std::string& source_root,
                   const std::string& staging) {
  for (Submission& s : submissions) {
    const fs::path file = fs::path(s.base) / "expected.yaml";
    if (!s.problem.empty() || !fs::exists(file)) continue;
    const YAML::Node files = YAML::LoadFile(file.string())["files"];
    if (!files) continue;
    if (files.IsMap()) {
      s.base = stage_with_kit_parts(s, files, source_root, staging, file);
    } else if (files.as<std::string>() == "starter") {
      s.base = source_root;  // labs/NN-name/ holds each starter
    } else if (files.as<std::string>() == "reference") {
      s.base = (fs::path(source_root) / "solutions").string();  // solutions/NN-name/
    } else {
      throw BadInput(file.string() + " says `files: " + files.as<std::string>() +
                     "`; the kit's files are `starter` or `reference`");
    }
  }
}

ExpectationCheck check_expectations(const std::vector<Report>& reports, const std::string& base_dir,
                                    const std::vector<std::string>& known_labs, bool undefended) {
  ExpectationCheck check;
  for (const Report& report : reports) {
    const fs::path file = fs::path(base_dir) / report.who / "expected.yaml";
    if (!fs::exists(file)) {
      check.errors.push_back(report.who + " has no expected.yaml: nothing says what its grading must be");
      continue;
    }
    const YAML::Node root = YAML::LoadFile(file.string());
    const YAML::Node labs = undefended ? root["undefended"]["labs"] : root["labs"];
    const std::vector<std::string> problems = file_problems(file, labs, known_labs);
    check.errors.insert(check.errors.end(), problems.begin(), problems.end());
    if (!problems.empty()) continue;
    if (!undefended) {
      const std::vector<std::string> left_out = unexpected_labs(file, root, known_labs);
      check.errors.insert(check.errors.end(), left_out.begin(), left_out.end());
    }
    for (const LabResult& lab : report.labs) {
      const YAML::Node expected = labs[lab.id];
      if (!expected) continue;
      const bool could_not_run = lab.status == LabStatus::not_run;
      if (could_not_run && expected["status"].as<std::string>("graded") != to_string(LabStatus::not_run)) {
        ++check.needs_gpu;
        continue;
      }
      ++check.checked;
      for (const std::string& difference : differences(lab, expected))
        check.mismatches.push_back(report.who + " lab " + lab.id + ": " + difference);
    }
  }
  return check;
}

void add_check(ExpectationCheck& into, const ExpectationCheck& more) {
  into.checked += more.checked;
  into.needs_gpu += more.needs_gpu;
  into.mismatches.insert(into.mismatches.end(), more.mismatches.begin(), more.mismatches.end());
  into.errors.insert(into.errors.end(), more.errors.begin(), more.errors.end());
}

namespace {

// The defences an `undefended:` block names, checked, sorted and joined by ','.
std::string defence_list(const fs::path& file, const YAML::Node& block) {
  std::set<std::string> names;
  for (const YAML::Node& name : block["defences"]) {
    try {
      names.insert(labkit::to_string(labkit::parse_defence(name.as<std::string>())));
    } catch (const std::invalid_argument& error) {
      throw BadInput(file.string() + ": " + error.what());
    }
  }
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ",") + name;
  return joined;
}

}  // namespace

std::map<std::string, std::vector<Submission>> group_by_undefended(const std::vector<Submission>& submissions,
                                                                   std::vector<std::string>& problems) {
  std::map<std::string, std::vector<Submission>> groups;
  for (const Submission& s : submissions) {
    const fs::path file = fs::path(s.base) / "expected.yaml";
    if (!s.problem.empty() || !fs::exists(file)) continue;  // check_expectations says so
    const YAML::Node root = YAML::LoadFile(file.string());
    if (root["honest"].as<bool>(false)) continue;
    const YAML::Node block = root["undefended"];
    const std::string defences = block ? defence_list(file, block) : "";
    if (defences.empty()) {
      problems.push_back(file.string() + " has neither `honest: true` nor an `undefended:` block naming the "
                         "defences its attack defeats: nothing proves the attack is live");
      continue;
    }
    groups[defences].push_back(s);
  }
  return groups;
}

}  // namespace grade
