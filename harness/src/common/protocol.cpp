#include "labkit/protocol.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <stdexcept>

using nlohmann::json;

namespace labkit::protocol {

std::string module_variable(const std::string& module_name) {
  std::string variable = std::string(env::module_prefix) + module_name;
  std::transform(variable.begin(), variable.end(), variable.begin(), [](unsigned char c) { return std::toupper(c); });
  return variable;
}

// ---- outcomes and record types -----------------------------------------------------------------

ComputePeak compute_peak(const nlohmann::json& measurement) {
  if (measurement.contains("peak_bf16_tensor_gflops"))
    return {measurement.value("peak_bf16_tensor_gflops", 0.0), "BF16 tensor-core peak"};
  return {measurement.value("peak_fp32_gflops", 0.0), "FP32 peak"};
}

Throughput throughput(const nlohmann::json& measurement, const nlohmann::json& side) {
  const double ms = side.value("median_ms", 0.0);
  const double flops = measurement.value("flops_shown", measurement.value("flops", 0.0));
  const ComputePeak peak = compute_peak(measurement);
  if (flops > 0 && peak.gflops > 0 && ms > 0) {
    const double gflops = flops / (ms * 1e6);
    return {true, gflops / 1e3, 100.0 * gflops / peak.gflops, peak.name};
  }
  return {false, side.value("gbps", 0.0), side.value("percent_of_peak", 0.0), ""};
}

std::string Throughput::text() const {
  char line[128];
  if (compute_bound) std::snprintf(line, sizeof line, "%.1f TFLOP/s, %.1f%% of %s", rate, percent, peak_name.c_str());
  else std::snprintf(line, sizeof line, "%.0f GB/s, %.1f%% of peak", rate, percent);
  return line;
}

namespace {

constexpr Outcome all_outcomes[] = {Outcome::passed, Outcome::failed, Outcome::not_run, Outcome::hung};
constexpr RecordType all_types[] = {RecordType::correctness, RecordType::performance, RecordType::calibration,
                                    RecordType::profiled,    RecordType::progress,    RecordType::device,
                                    RecordType::sandbox,     RecordType::skipped,     RecordType::fault,
                                    RecordType::forbidden,   RecordType::done,        RecordType::clock};

}  // namespace

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed: return "passed";
    case Outcome::failed: return "failed";
    case Outcome::not_run: return "not run";
    case Outcome::hung: return "hung";
  }
  return "failed";
}

std::optional<Outcome> outcome_from_string(const std::string& text) {
  for (Outcome outcome : all_outcomes)
    if (text == to_string(outcome)) return outcome;
  return std::nullopt;
}

const char* to_string(RecordType type) {
  switch (type) {
    case RecordType::correctness: return "correctness";
    case RecordType::performance: return "performance";
    case RecordType::calibration: return "calibration";
    case RecordType::profiled: return "profiled";
    case RecordType::progress: return "progress";
    case RecordType::device: return "device";
    case RecordType::sandbox: return "sandbox";
    case RecordType::skipped: return "skipped";
    case RecordType::fault: return "fault";
    case RecordType::forbidden: return "forbidden";
    case RecordType::done: return "done";
    case RecordType::clock: return "clock";
  }
  return "";
}

std::optional<RecordType> record_type_from_string(const std::string& text) {
  for (RecordType type : all_types)
    if (text == to_string(type)) return type;
  return std::nullopt;
}

// ---- records to and from JSON ------------------------------------------------------------------

namespace {

struct TypeOf {
  RecordType operator()(const CorrectnessRecord&) const { return RecordType::correctness; }
  RecordType operator()(const PerformanceRecord& r) const {
    return r.calibration ? RecordType::calibration : RecordType::performance;
  }
  RecordType operator()(const ProfiledRecord&) const { return RecordType::profiled; }
  RecordType operator()(const ProgressRecord&) const { return RecordType::progress; }
  RecordType operator()(const DeviceRecord&) const { return RecordType::device; }
  RecordType operator()(const SandboxRecord&) const { return RecordType::sandbox; }
  RecordType operator()(const SkippedRecord&) const { return RecordType::skipped; }
  RecordType operator()(const FaultRecord&) const { return RecordType::fault; }
  RecordType operator()(const ForbiddenRecord&) const { return RecordType::forbidden; }
  RecordType operator()(const DoneRecord&) const { return RecordType::done; }
  RecordType operator()(const ClockRecord&) const { return RecordType::clock; }
};

struct Fields {
  json operator()(const CorrectnessRecord& r) const {
    return {{"case", r.case_name}, {"outcome", to_string(r.outcome)}, {"message", r.message}};
  }
  json operator()(const PerformanceRecord& r) const {
    json j = r.measurement.is_object() ? r.measurement : json::object();
    j.update({{"case", r.case_name}, {"outcome", to_string(r.outcome)}, {"message", r.message}});
    return j;
  }
  json operator()(const ProfiledRecord& r) const {
    return {{"case", r.case_name}, {"output_ok", r.output_ok}, {"message", r.message}};
  }
  json operator()(const ProgressRecord& r) const {
    return {{"kind", r.kind}, {"case", r.case_name}, {"stage", r.stage}};
  }
  json operator()(const DeviceRecord& r) const {
    return {{"name", r.name}, {"compute_capability", r.compute_capability}, {"sm_count", r.sm_count}};
  }
  json operator()(const SandboxRecord& r) const { return {{"description", r.description}}; }
  json operator()(const SkippedRecord& r) const { return {{"reason", r.reason}}; }
  json operator()(const FaultRecord& r) const { return {{"message", r.message}}; }
  json operator()(const ForbiddenRecord& r) const { return {{"library", r.library}}; }
  json operator()(const DoneRecord& r) const { return {{"failures", r.failures}}; }
  json operator()(const ClockRecord& r) const {
    return {{"counting", r.counting}, {"why", r.why}, {"to_time", r.to_time}};
  }
};

std::string text(const json& j, const char* key) {
  const auto found = j.find(key);
  return found != j.end() && found->is_string() ? found->get<std::string>() : std::string();
}

Outcome outcome_of(const json& j) {
  return outcome_from_string(text(j, "outcome")).value_or(Outcome::failed);
}

Record from_json(RecordType type, const json& j) {
  switch (type) {
    case RecordType::correctness: return CorrectnessRecord{text(j, "case"), outcome_of(j), text(j, "message")};
    case RecordType::performance:
    case RecordType::calibration:
      return PerformanceRecord{text(j, "case"), outcome_of(j), text(j, "message"), j,
                               type == RecordType::calibration};
    case RecordType::profiled:
      return ProfiledRecord{text(j, "case"), j.value("output_ok", false), text(j, "message")};
    case RecordType::progress: return ProgressRecord{text(j, "kind"), text(j, "case"), text(j, "stage")};
    case RecordType::device:
      return DeviceRecord{text(j, "name"), text(j, "compute_capability"), j.value("sm_count", 0)};
    case RecordType::sandbox: return SandboxRecord{text(j, "description")};
    case RecordType::skipped: return SkippedRecord{text(j, "reason")};
    case RecordType::fault: return FaultRecord{text(j, "message")};
    case RecordType::forbidden: return ForbiddenRecord{text(j, "library")};
    case RecordType::done: return DoneRecord{j.value("failures", 0)};
    case RecordType::clock: return ClockRecord{j.value("counting", true), text(j, "why"), j.value("to_time", false)};
  }
  throw std::logic_error("unknown record type");
}

}  // namespace

RecordType type_of(const Record& record) { return std::visit(TypeOf{}, record); }

json to_json(const Record& record) {
  json j = std::visit(Fields{}, record);
  j["type"] = to_string(type_of(record));
  return j;
}

std::optional<Record> read_record(const std::string& line, const std::string& token) {
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || text(j, "token") != token || token.empty()) return std::nullopt;
  const std::optional<RecordType> type = record_type_from_string(text(j, "type"));
  if (!type) return std::nullopt;
  try {
    return from_json(*type, j);
  } catch (const json::exception&) {  // a field of the wrong kind: not a record of ours
    return std::nullopt;
  }
}

// ---- the runner's command line -----------------------------------------------------------------

namespace {

namespace flag {
constexpr const char* student = "--student";
constexpr const char* reference = "--reference";
constexpr const char* dataset = "--dataset";
constexpr const char* threshold = "--threshold";  // NAME:ZERO:FULL:POINTS, once per case
constexpr const char* export_dir = "--export";
constexpr const char* host = "--host";
constexpr const char* calibration_dir = "--calibration";
constexpr const char* kit_fingerprint = "--kit-fingerprint";
constexpr const char* forbidden_libraries = "--forbidden-libraries";
constexpr const char* host_wrapper = "--host-wrapper";
constexpr const char* tool_slowdown = "--tool-slowdown";
constexpr const char* call_seconds = "--call-time-limit";
constexpr const char* min_compute_capability = "--min-compute-capability";
constexpr const char* min_gpus = "--min-gpus";
constexpr const char* profile = "--profile";
constexpr const char* calibrate = "--calibrate";
constexpr const char* time_failed = "--time-failed";
constexpr const char* seed = "--seed";
constexpr const char* test_suite = "--test-suite";  // doctest's
constexpr const char* subcase = "--subcase";        // doctest's
}  // namespace flag

std::string joined(const std::vector<std::string>& items, char separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : std::string(1, separator)) + item;
  return text;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, separator);)
    if (!item.empty()) items.push_back(item);
  return items;
}

// A number the way std::to_string writes it, which reads back exactly enough for a limit.
std::string number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

template <class Read>
auto read_value(const std::string& name, const std::string& value, Read read) {
  try {
    return read(value);
  } catch (const std::exception&) {
    throw std::invalid_argument("the runner's " + name + " cannot read '" + value + "'");
  }
}

// NAME:ZERO:FULL:POINTS; the case's name is what comes before the last three colons.
Threshold read_threshold(const std::string& text) {
  std::size_t colons[3];
  std::size_t end = text.size();
  for (std::size_t& colon : colons) {
    colon = end == 0 ? std::string::npos : text.rfind(':', end - 1);
    if (colon == std::string::npos || colon == 0)
      throw std::invalid_argument("the runner's " + std::string(flag::threshold) + " cannot read '" + text +
                                  "' (NAME:ZERO:FULL:POINTS)");
    end = colon;
  }
  auto number_between = [&](std::size_t from, std::size_t to) {
    return read_value(flag::threshold, text.substr(from + 1, to - from - 1),
                      [](const std::string& v) { return std::stod(v); });
  };
  return {text.substr(0, colons[2]), number_between(colons[2], colons[1]), number_between(colons[1], colons[0]),
          number_between(colons[0], text.size())};
}

}  // namespace

std::vector<std::string> RunnerArguments::to_argv() const {
  std::vector<std::string> argv;
  auto add = [&argv](const char* name, const std::string& value) {
    if (!value.empty()) argv.push_back(std::string(name) + "=" + value);
  };
  add(flag::student, student);
  add(flag::reference, reference);
  add(flag::dataset, dataset);
  for (const Threshold& t : thresholds)
    argv.push_back(std::string(flag::threshold) + "=" + t.case_name + ":" + number(t.zero_credit_ratio) + ":" +
                   number(t.full_credit_ratio) + ":" + number(t.points));
  add(flag::export_dir, export_dir);
  add(flag::host, host);
  add(flag::calibration_dir, calibration_dir);
  add(flag::kit_fingerprint, kit_fingerprint);
  add(flag::forbidden_libraries, joined(forbidden_libraries, ','));
  for (const std::string& argument : host_wrapper) argv.push_back(std::string(flag::host_wrapper) + "=" + argument);
  if (tool_slowdown != 1) add(flag::tool_slowdown, number(tool_slowdown));
  if (call_seconds != RunnerArguments{}.call_seconds) add(flag::call_seconds, number(call_seconds));
  add(flag::min_compute_capability, min_compute_capability);
  if (min_gpus > 0) add(flag::min_gpus, std::to_string(min_gpus));
  if (profile) argv.push_back(flag::profile);
  if (calibrate) argv.push_back(flag::calibrate);
  if (time_failed) argv.push_back(flag::time_failed);
  if (seed) add(flag::seed, std::to_string(*seed));
  add(flag::test_suite, test_suite);
  add(flag::subcase, joined(subcases, ','));
  argv.insert(argv.end(), doctest.begin(), doctest.end());
  return argv;
}

RunnerArguments RunnerArguments::parse(const std::vector<std::string>& arguments) {
  RunnerArguments args;
  const std::vector<std::pair<const char*, std::string*>> texts = {
      {flag::student, &args.student},         {flag::reference, &args.reference},
      {flag::dataset, &args.dataset},
      {flag::export_dir, &args.export_dir},   {flag::host, &args.host},
      {flag::calibration_dir, &args.calibration_dir}, {flag::kit_fingerprint, &args.kit_fingerprint},
      {flag::min_compute_capability, &args.min_compute_capability}, {flag::test_suite, &args.test_suite}};
  const std::vector<std::pair<const char*, bool*>> switches = {
      {flag::profile, &args.profile}, {flag::calibrate, &args.calibrate}, {flag::time_failed, &args.time_failed}};
  const std::vector<const char*> valued = {flag::forbidden_libraries, flag::host_wrapper, flag::tool_slowdown,
                                           flag::call_seconds,        flag::min_gpus,     flag::seed,
                                           flag::subcase,             flag::threshold};
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    const std::size_t equals = argument.find('=');
    const std::string name = argument.substr(0, equals);
    auto value = [&]() -> std::string {
      if (equals != std::string::npos) return argument.substr(equals + 1);
      if (i + 1 >= arguments.size()) throw std::invalid_argument("the runner's " + name + " needs a value");
      return arguments[++i];
    };
    bool taken = false;
    for (const auto& [flag_name, field] : texts)
      if (name == flag_name) *field = value(), taken = true;
    for (const auto& [flag_name, field] : switches)
      if (argument == flag_name) *field = true, taken = true;
    if (taken) continue;
    if (std::find_if(valued.begin(), valued.end(), [&](const char* f) { return name == f; }) == valued.end()) {
      args.doctest.push_back(argument);
      continue;
    }
    const std::string text = value();
    if (name == flag::forbidden_libraries) {
      args.forbidden_libraries = split(text, ',');
    } else if (name == flag::host_wrapper) {
      args.host_wrapper.push_back(text);
    } else if (name == flag::tool_slowdown) {
      args.tool_slowdown = std::max(1.0, read_value(name, text, [](const std::string& t) { return std::stod(t); }));
    } else if (name == flag::call_seconds) {
      args.call_seconds = read_value(name, text, [](const std::string& t) { return std::stod(t); });
    } else if (name == flag::min_gpus) {
      args.min_gpus = read_value(name, text, [](const std::string& t) { return std::stoi(t); });
    } else if (name == flag::seed) {
      args.seed = read_value(name, text, [](const std::string& t) { return std::stoull(t); });
    } else if (name == flag::subcase) {
      args.subcases = split(text, ',');
    } else if (name == flag::threshold) {
      args.thresholds.push_back(read_threshold(text));
    }
  }
  return args;
}

}  // namespace labkit::protocol
