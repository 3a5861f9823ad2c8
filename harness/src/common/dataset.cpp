#include "labkit/dataset.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace labkit {

namespace {

// Sizes are written the way people say them: 1000003, 2^26, 100Mi, 1Gi.
std::size_t parse_size(const std::string& text) {
  std::size_t used = 0;
  const unsigned long long base = std::stoull(text, &used);
  const std::string rest = text.substr(used);
  if (rest.empty()) return base;
  if (rest[0] == '^') return std::size_t(1) << std::stoul(rest.substr(1));
  if (rest == "Ki") return base << 10;
  if (rest == "Mi") return base << 20;
  if (rest == "Gi") return base << 30;
  throw std::invalid_argument("cannot read size '" + text + "' (write 1000, 2^26, 100Mi or 1Gi)");
}

const std::set<std::string> core_keys = {"name", "n", "distribution", "seed", "lo", "hi", "distinct", "strays", "hidden"};

Case read_case(const YAML::Node& node, const YAML::Node& defaults, const std::string& kind,
               std::uint64_t run_seed) {
  auto field = [&](const char* key) { return node[key] ? node[key] : defaults[key]; };
  Case c;
  c.kind = kind;
  c.name = node["name"].as<std::string>();
  c.n = field("n") ? parse_size(field("n").as<std::string>()) : 0;
  c.hidden = field("hidden") && field("hidden").as<bool>();
  if (field("distribution")) c.input.distribution = parse_distribution(field("distribution").as<std::string>());
  c.input.seed = mix_seeds(field("seed") ? field("seed").as<std::uint64_t>() : 1, run_seed);
  if (field("lo")) c.input.lo = field("lo").as<double>();
  if (field("hi")) c.input.hi = field("hi").as<double>();
  if (field("distinct")) c.input.distinct = field("distinct").as<int>();
  if (field("strays")) c.input.strays = field("strays").as<int>();
  for (const YAML::Node* source : {&defaults, &node})
    for (const auto& entry : *source) {
      const auto key = entry.first.as<std::string>();
      if (!core_keys.count(key)) c.params[key] = entry.second.as<std::string>();
    }
  // A case repeated no times makes no call: it would pass while checking nothing.
  if (c.has("repeats") && c.integer("repeats") < 1)
    throw std::invalid_argument("case '" + c.name + "' has repeats: " + c.params.at("repeats") +
                                ", so it would make no call and pass while checking nothing (write 1 or more)");
  return c;
}

std::vector<Case> read_cases(const YAML::Node& root, const char* kind, std::uint64_t run_seed) {
  std::vector<Case> cases;
  const YAML::Node defaults = root["defaults"] ? root["defaults"] : YAML::Node(YAML::NodeType::Map);
  for (const auto& node : root[kind]) cases.push_back(read_case(node, defaults, kind, run_seed));
  return cases;
}

const std::string& require(const Case& c, const std::string& key) {
  auto it = c.params.find(key);
  if (it == c.params.end()) throw std::invalid_argument("case '" + c.name + "' has no '" + key + "'");
  return it->second;
}

}  // namespace

long long Case::integer(const std::string& key) const { return std::stoll(require(*this, key)); }
long long Case::integer(const std::string& key, long long fallback) const {
  return has(key) ? integer(key) : fallback;
}
double Case::number(const std::string& key) const { return std::stod(require(*this, key)); }
double Case::number(const std::string& key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

std::string Case::label() const {
  std::ostringstream out;
  out << to_string(input.distribution) << " n=" << n;
  for (const auto& [key, value] : params) out << ' ' << key << '=' << value;
  return out.str();
}

Dataset load_dataset(const std::string& path, std::uint64_t run_seed) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& error) {
    throw std::runtime_error("cannot read dataset " + path + ": " + error.what());
  }
  Dataset dataset;
  dataset.lab = root["lab"].as<std::string>("");
  dataset.correctness = read_cases(root, "correctness", run_seed);
  dataset.performance = read_cases(root, "performance", run_seed);
  dataset.benchmark = read_cases(root, "benchmark", run_seed);
  return dataset;
}

std::vector<Case> benchmark_cases(const Dataset& dataset) {
  std::vector<Case> cases = dataset.performance;
  cases.insert(cases.end(), dataset.benchmark.begin(), dataset.benchmark.end());
  std::stable_sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.n < b.n; });
  return cases;
}

}  // namespace labkit
