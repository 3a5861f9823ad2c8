#include "catalog.h"

#include "bad_input.h"
#include "sanitize.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
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
  if (entry["loader_libraries"]) module.loader_libraries = entry["loader_libraries"].as<std::vector<std::string>>();
  if (const YAML::Node build = entry["build"]; build && build["nvcc_flags"])
    module.nvcc_flags = build["nvcc_flags"].as<std::vector<std::string>>();
  if (entry["forbidden"]) module.forbidden = entry["forbidden"].as<std::vector<std::string>>();
  return module;
}

// The kit's own sources in the lab's folder, found by name: its one test_*.cu (the checks)
// and at most one bench_*.cu, so that copying a lab folder and renaming them is all it takes.
void find_kit_sources(const fs::path& dir, LabSpec& lab) {
  std::vector<std::string> checks, benches;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".cu") continue;
    if (name.rfind("test_", 0) == 0) checks.push_back(name);
    if (name.rfind("bench_", 0) == 0) benches.push_back(name);
  }
  if (checks.size() != 1)
    throw std::runtime_error("a lab's checks are one test_*.cu in its folder; " + dir.string() + " has " +
                             std::to_string(checks.size()));
  if (benches.size() > 1)
    throw std::runtime_error("a lab's benchmark is one bench_*.cu in its folder; " + dir.string() + " has " +
                             std::to_string(benches.size()));
  lab.checks = checks.front();
  lab.bench = benches.empty() ? "" : benches.front();
}

// `kit_libraries: {checks: [cublas], bench: [cublas]}`.
void read_kit_libraries(const YAML::Node& libraries, LabSpec& lab) {
  for (const auto& entry : libraries) {
    const std::string program = entry.first.as<std::string>();
    if (program == "checks") {
      lab.checks_libraries = entry.second.as<std::vector<std::string>>();
    } else if (program == "bench") {
      lab.bench_libraries = entry.second.as<std::vector<std::string>>();
    } else {
      throw std::runtime_error("kit_libraries: unknown program '" + program + "' (known: checks, bench)");
    }
  }
}

// The text of a C or C++ source with its comments blanked (string literals kept whole).
std::string without_comments(const std::string& code) {
  std::string out;
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '"') {
      const std::size_t start = i;
      for (++i; i < code.size() && code[i] != '"' && code[i] != '\n'; ++i)
        if (code[i] == '\\') ++i;
      out += code.substr(start, i - start + 1);
    } else if (code.compare(i, 2, "//") == 0) {
      while (i < code.size() && code[i] != '\n') ++i;
      out += '\n';
    } else if (code.compare(i, 2, "/*") == 0) {
      const std::size_t end = code.find("*/", i + 2);
      i = end == std::string::npos ? code.size() : end + 1;
      out += ' ';
    } else {
      out += code[i];
    }
  }
  return out;
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

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
    if (!rubric["contract"])
      throw std::runtime_error("no `contract:`, the header that declares the functions a student writes");
    lab.contract = rubric["contract"].as<std::string>();
    lab.contract_functions = contract_functions((dir / lab.contract).string());
    find_kit_sources(dir, lab);
    if (const YAML::Node libraries = rubric["kit_libraries"]) read_kit_libraries(libraries, lab);
    lab.correctness_points = rubric["correctness"]["points"].as<double>();
    for (const auto& entry : rubric["performance"])
      lab.performance.push_back(checked_curve({entry["case"].as<std::string>(), entry["points"].as<double>(),
                                               entry["zero_credit_ratio"].as<double>(),
                                               entry["full_credit_ratio"].as<double>(),
                                               entry["about"].as<std::string>("")}));
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

std::vector<std::string> contract_functions(const std::string& header) {
  std::ifstream in(header);
  if (!in) throw std::runtime_error("cannot read the contract header " + header);
  std::stringstream text;
  text << in.rdbuf();
  const std::string code = without_comments(text.str());
  const std::string marker = "extern \"C\"";
  std::vector<std::string> names;
  for (std::size_t at = code.find(marker); at != std::string::npos; at = code.find(marker, at + marker.size())) {
    const std::size_t next = code.find_first_not_of(" \t\r\n", at + marker.size());
    if (next != std::string::npos && code[next] == '{')
      throw std::runtime_error(header + ": declare each contract function on its own, `extern \"C\" void f(...);`, "
                               "not in an `extern \"C\" {` block");
    // The name is the last word before the parameter list.
    std::size_t end = code.find('(', at);
    if (end == std::string::npos) break;
    while (end > at && std::isspace(static_cast<unsigned char>(code[end - 1]))) --end;
    std::size_t begin = end;
    while (begin > at && identifier_char(code[begin - 1])) --begin;
    const std::string name = code.substr(begin, end - begin);
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
      throw std::runtime_error(header + ": cannot read the name of a function declared extern \"C\"");
    names.push_back(name);
  }
  if (names.empty())
    throw std::runtime_error(header + " declares no `extern \"C\"` function: the contract is the functions a "
                             "student writes, each declared `extern \"C\"`");
  return names;
}

nlohmann::json catalog_json(const std::vector<LabSpec>& labs) {
  nlohmann::json out = nlohmann::json::array();
  for (const LabSpec& lab : labs) {
    nlohmann::json modules = nlohmann::json::array();
    for (const ExtraModule& extra : lab.modules)
      modules.push_back({{"name", extra.name}, {"files", extra.files}, {"loader", extra.loader},
                         {"loader_libraries", extra.loader_libraries}});
    out.push_back({{"dir", lab.dir}, {"id", lab.id}, {"name", lab.name}, {"title", lab.title},
                   {"folder", lab.folder}, {"dataset", lab.dataset}, {"student_files", lab.student_files},
                   {"module_files", lab.module_files()}, {"forbidden", lab.forbidden}, {"min_gpus", lab.min_gpus},
                   {"time_limit_seconds", lab.time_limit_seconds}, {"max_points", max_points(lab)},
                   {"nvcc_flags", lab.nvcc_flags}, {"link_libraries", lab.link_libraries},
                   {"modules", modules}, {"contract", lab.contract}, {"contract_functions", lab.contract_functions},
                   {"checks", lab.checks}, {"bench", lab.bench},
                   {"kit_libraries", {{"checks", lab.checks_libraries}, {"bench", lab.bench_libraries}}}});
  }
  return out;
}

namespace {

// One value as Meson reads it: an array of scalars joined by spaces, on one line.
std::string flat_value(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return value.dump();
  std::string joined;
  for (const nlohmann::json& item : value) joined += (joined.empty() ? "" : " ") + flat_value(item);
  return joined;
}

bool array_of_named_objects(const nlohmann::json& value) {
  return value.is_array() && !value.empty() &&
         std::all_of(value.begin(), value.end(),
                     [](const nlohmann::json& item) { return item.is_object() && item.contains("name"); });
}

void add_key_values(const std::string& key, const nlohmann::json& value, std::string& out) {
  if (value.is_object()) {
    for (const auto& [field, inner] : value.items()) add_key_values(key + "." + field, inner, out);
    return;
  }
  if (array_of_named_objects(value)) {
    std::string names;
    for (const nlohmann::json& item : value) {
      names += (names.empty() ? "" : " ") + item["name"].get<std::string>();
      add_key_values(key + "." + item["name"].get<std::string>(), item, out);
    }
    out += key + "=" + names + "\n";
    return;
  }
  std::string text = flat_value(value);
  std::replace(text.begin(), text.end(), '\n', ' ');
  out += key + "=" + text + "\n";
}

}  // namespace

std::string catalog_key_values(const nlohmann::json& catalog) {
  std::string out = "labs=";
  for (const nlohmann::json& lab : catalog) out += (out == "labs=" ? "" : " ") + lab["dir"].get<std::string>();
  out += "\n";
  for (const nlohmann::json& lab : catalog) add_key_values(lab["dir"].get<std::string>(), lab, out);
  return out;
}

double max_points(const LabSpec& lab) {
  double points = lab.correctness_points;
  for (const PerformanceRubric& rubric : lab.performance) points += rubric.points;
  return points;
}

}  // namespace grade
