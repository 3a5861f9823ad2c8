#include "build_targets.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace grade {

namespace {

constexpr const char* grader_target = "harness/grade/labkit-grade";

// lab-targets.txt: "01-histogram labs/lab-01-histogram-runner ..." per lab; # starts a comment.
std::map<std::string, std::vector<std::string>> targets_by_lab(const fs::path& file) {
  std::map<std::string, std::vector<std::string>> by_lab;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string dir;
    if (!(words >> dir) || dir.front() == '#') continue;
    for (std::string target; words >> target;) by_lab[dir].push_back(target);
  }
  return by_lab;
}

}  // namespace

std::vector<std::string> build_targets(const std::vector<LabSpec>& labs, const std::string& build_root) {
  std::vector<std::string> targets = {grader_target};
  if (labs.empty()) return targets;
  const auto by_lab = targets_by_lab(fs::path(build_root) / "labs" / "lab-targets.txt");
  for (const LabSpec& lab : labs) {
    const auto found = by_lab.find(lab.dir);
    if (found == by_lab.end()) return {"all"};  // a build configured before the list existed
    targets.insert(targets.end(), found->second.begin(), found->second.end());
  }
  return targets;
}

}  // namespace grade
