#include "catalog.h"

#include "bad_input.h"
#include "sanitize.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace grade {

namespace {

std::vector<std::string> checked_tools(const std::vector<std::string>& tools) {
  for (const std::string& tool : tools)
    if (std::find(sanitize::known_tools().begin(), sanitize::known_tools().end(), tool) == sanitize::known_tools().end())
      throw std::runtime_error("sanitize: unknown compute-sanitizer tool '" + tool +
                               "' (known: memcheck, racecheck, synccheck, initcheck)");
  return tools;
}

// Points rise with log(ratio / zero_credit_ratio) (labkit::ratio_points), which needs a
// zero-credit ratio above zero and below the full-credit one.
PerformanceRubric checked_curve(const PerformanceRubric& rubric) {
  if (!(rubric.zero_credit_ratio > 0 && rubric.zero_credit_ratio < rubric.full_credit_ratio))
    throw std::runtime_error("performance case " + rubric.case_name +
                             ": zero_credit_ratio must be above 0 and below full_credit_ratio");
  return rubric;
}

ExtraModule read_module(const std::string& name, const YAML::Node& entry) {
  ExtraModule module{name, entry["files"].as<std::vector<std::string>>(), entry["loader"].as<std::string>()};
  if (const YAML::Node build = entry["build"]; build && build["nvcc_flags"])
    module.nvcc_flags = build["nvcc_flags"].as<std::vector<std::string>>();
  if (entry["forbidden"]) module.forbidden = entry["forbidden"].as<std::vector<std::string>>();
  return module;
}

LabSpec read_lab(const fs::path& dir, const std::string& source_root) {
  const fs::path rubric_path = dir / "lab.yaml";
  try {
    const YAML::Node rubric = YAML::LoadFile(rubric_path.string());
    LabSpec lab;
    lab.dir = dir.filename().string();
    lab.folder = dir.string();
    lab.id = lab.dir.substr(0, lab.dir.find('-'));
    lab.name = lab.dir.substr(lab.dir.find('-') + 1);
    lab.title = rubric["title"].as<std::string>();
    lab.dataset = (fs::path(source_root) / "datasets" / rubric["dataset"].as<std::string>()).string();
    lab.student_files = rubric["student_files"].as<std::vector<std::string>>();
    if (rubric["forbidden"]) lab.forbidden = rubric["forbidden"].as<std::vector<std::string>>();
    lab.time_limit_seconds = rubric["time_limit_seconds"].as<int>(300);
    if (const YAML::Node needs = rubric["requires"]) {
      lab.min_compute_capability = needs["compute_capability"].as<std::string>(lab.min_compute_capability);
      lab.min_gpus = needs["gpus"].as<int>(lab.min_gpus);
    }
    if (const YAML::Node build = rubric["build"]) {
      if (build["nvcc_flags"]) lab.nvcc_flags = build["nvcc_flags"].as<std::vector<std::string>>();
      if (build["link"]) lab.link_libraries = build["link"].as<std::vector<std::string>>();
    }
    if (rubric["sanitize"]) lab.sanitize_tools = checked_tools(rubric["sanitize"].as<std::vector<std::string>>());
    for (const auto& entry : rubric["modules"])
      lab.modules.push_back(read_module(entry.first.as<std::string>(), entry.second));
    lab.correctness_points = rubric["correctness"]["points"].as<double>();
    for (const auto& entry : rubric["performance"])
      lab.performance.push_back(checked_curve({entry["case"].as<std::string>(), entry["points"].as<double>(),
                                               entry["zero_credit_ratio"].as<double>(),
                                               entry["full_credit_ratio"].as<double>()}));
    return lab;
  } catch (const YAML::Exception& error) {
    throw std::runtime_error(rubric_path.string() + ": " + error.what());
  } catch (const std::runtime_error& error) {
    throw std::runtime_error(rubric_path.string() + ": " + error.what());
  }
}

}  // namespace

std::vector<std::string> LabSpec::module_files() const {
  std::vector<std::string> files;
  for (const std::string& file : student_files) {
    bool apart = false;
    for (const ExtraModule& module : modules)
      apart = apart || std::find(module.files.begin(), module.files.end(), file) != module.files.end();
    if (!apart) files.push_back(file);
  }
  return files;
}

std::vector<LabSpec> load_catalog(const std::string& source_root) {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(fs::path(source_root) / "labs"))
    if (entry.is_directory() && fs::exists(entry.path() / "lab.yaml")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  std::vector<LabSpec> labs;
  for (const auto& dir : dirs) labs.push_back(read_lab(dir, source_root));
  return labs;
}

const LabSpec& find_lab(const std::vector<LabSpec>& labs, const std::string& typed) {
  // A folder, as tab completion gives it ("labs/01-histogram/"), names the lab by its last part.
  fs::path folder = fs::path(typed).lexically_normal();
  if (folder.filename().empty()) folder = folder.parent_path();
  const std::string key = typed.find('/') == std::string::npos ? typed : folder.filename().string();
  for (const LabSpec& lab : labs) {
    const bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
    if (key == lab.dir || key == lab.name || key == lab.id ||
        (numeric && std::stoi(key) == std::stoi(lab.id)))
      return lab;
  }
  std::string known;
  for (const LabSpec& lab : labs) known += " " + lab.dir;
  throw BadInput("no lab '" + typed + "'; the labs are:" + known);
}

nlohmann::json catalog_json(const std::vector<LabSpec>& labs) {
  nlohmann::json out = nlohmann::json::array();
  for (const LabSpec& lab : labs) {
    nlohmann::json modules = nlohmann::json::array();
    for (const ExtraModule& extra : lab.modules) modules.push_back({{"name", extra.name}, {"files", extra.files}});
    out.push_back({{"dir", lab.dir}, {"id", lab.id}, {"name", lab.name}, {"title", lab.title},
                   {"folder", lab.folder}, {"dataset", lab.dataset}, {"student_files", lab.student_files},
                   {"forbidden", lab.forbidden}, {"min_gpus", lab.min_gpus},
                   {"time_limit_seconds", lab.time_limit_seconds}, {"max_points", max_points(lab)},
                   {"modules", modules}});
  }
  return out;
}

double max_points(const LabSpec& lab) {
  double points = lab.correctness_points;
  for (const PerformanceRubric& rubric : lab.performance) points += rubric.points;
  return points;
}

}  // namespace grade
