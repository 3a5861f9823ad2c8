#include "profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

namespace grade::profile {

namespace {

constexpr const char* duration = "gpu__time_duration.sum";
constexpr const char* dram = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* achieved_occupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr const char* theoretical_occupancy = "sm__maximum_warps_per_active_cycle_pct";
constexpr const char* conflicts_load = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
constexpr const char* conflicts_store = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
constexpr const char* l2_atomics = "lts__t_sectors_op_atom.sum";
constexpr const char* l2_reductions = "lts__t_sectors_op_red.sum";
constexpr const char* registers = "launch__registers_per_thread";
// Warps stalled for each reason, per issued instruction: one metric per reason.
constexpr const char* stall_prefix = "smsp__average_warps_issue_stalled_";
constexpr const char* stall_suffix = "_per_issue_active.ratio";

// Kernels of the kit's host program (host_main.cu), not of the code under study.
const char* const kit_kernels[] = {"fill_shared_memory_kernel", "spin_kernel"};

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      field += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

// "1,234.5" (ncu groups thousands) → 1234.5; false for "n/a" or text.
bool number(std::string text, double& value) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  if (text.empty()) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end != nullptr && *end == '\0';
}

// ncu prints times in the unit it picks unless --print-units base; both are understood.
double to_base_unit(double value, const std::string& unit) {
  if (unit == "usecond" || unit == "us") return value * 1e3;
  if (unit == "msecond" || unit == "ms") return value * 1e6;
  if (unit == "second" || unit == "s") return value * 1e9;
  return value;
}

std::string short_name(std::string name) {
  for (const char* noise : {"void ", "(anonymous namespace)::", "<unnamed>::"})
    for (std::size_t at; (at = name.find(noise)) != std::string::npos;) name.erase(at, std::string(noise).size());
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    depth += name[i] == '<' ? 1 : name[i] == '>' ? -1 : 0;
    if (name[i] == '(' && depth == 0) return name.substr(0, i);
  }
  return name;
}

bool is_kit_kernel(const std::string& name) {
  return std::any_of(std::begin(kit_kernels), std::end(kit_kernels),
                     [&](const char* kit) { return name.find(kit) != std::string::npos; });
}

std::size_t column(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const auto at = std::find(header.begin(), header.end(), name); at != header.end())
      return std::size_t(at - header.begin());
  return std::string::npos;
}

// What one side's kernels add up to, for the table.
struct Summary {
  std::size_t kernels = 0;
  double total_ns = 0;
  const Kernel* main = nullptr;  // the longest
  double bank_conflicts = 0;
  double atomic_sectors = 0;
  std::vector<std::pair<double, std::string>> stalls;  // share of the main kernel's stalls, reason
};

double sum_of(const std::vector<Kernel>& kernels, const char* metric) {
  double total = 0;
  for (const Kernel& k : kernels) total += std::max(0.0, k.value(metric, 0));
  return total;
}

Summary summarise(const std::vector<Kernel>& kernels) {
  Summary s;
  s.kernels = kernels.size();
  s.total_ns = sum_of(kernels, duration);
  for (const Kernel& k : kernels)
    if (s.main == nullptr || k.value(duration, 0) > s.main->value(duration, 0)) s.main = &k;
  s.bank_conflicts = sum_of(kernels, conflicts_load) + sum_of(kernels, conflicts_store);
  s.atomic_sectors = sum_of(kernels, l2_atomics) + sum_of(kernels, l2_reductions);
  if (s.main == nullptr) return s;
  double all = 0;
  for (const auto& [name, value] : s.main->metrics) {
    const std::string prefix = stall_prefix, suffix = stall_suffix;
    if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string reason = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (reason == "selected" || value <= 0) continue;  // issuing is not a stall
    s.stalls.push_back({value, reason});
    all += value;
  }
  std::sort(s.stalls.rbegin(), s.stalls.rend());
  for (auto& stall : s.stalls) stall.first = all > 0 ? 100 * stall.first / all : 0;
  return s;
}

std::string format(const char* pattern, double value) {
  char text[512];  // the hints' sentences go through here too
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string percent(const Kernel* k, const char* metric) {
  const double value = k ? k->value(metric) : -1;
  return value < 0 ? "n/a" : format("%.1f%%", value);
}

std::string count(double value) {
  if (value >= 1e9) return format("%.2f G", value / 1e9);
  if (value >= 1e6) return format("%.2f M", value / 1e6);
  if (value >= 1e4) return format("%.1f k", value / 1e3);
  return format("%.0f", value);
}

std::string top_stalls(const Summary& s, std::size_t index) {
  return index < s.stalls.size() ? s.stalls[index].second + format(" (%.0f%%)", s.stalls[index].first) : "";
}

void row(std::ostringstream& out, const std::string& label, const std::string& yours, const std::string& reference) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-30s %-32s %s\n", label.c_str(), yours.c_str(), reference.c_str());
  out << line;
}

// What each stall reason usually asks of the code.
std::string stall_hint(const std::string& reason) {
  static const std::map<std::string, std::string> hints = {
      {"long_scoreboard", "warps wait for global-memory loads: more independent loads in flight per thread "
                          "(several elements per thread, wider loads), coalesced addresses"},
      {"lg_throttle", "the queue of global-memory instructions is full: fewer, wider accesses (int4/float4) "
                      "instead of many small ones"},
      {"barrier", "warps wait at __syncthreads: balance the work between the warps of a block, or sync less often"},
      {"membar", "warps wait on memory fences: fewer __threadfence calls"},
      {"short_scoreboard", "warps wait on shared memory (or special math): look for bank conflicts"},
      {"mio_throttle", "the shared-memory instruction queue is full: bank conflicts, or many shared-memory "
                       "atomics on few addresses"},
      {"math_pipe_throttle", "the arithmetic units are busy: the kernel is compute-bound (that is good)"},
      {"wait", "fixed-latency dependencies: give each thread more independent work"},
      {"not_selected", "warps were ready but another one issued: the scheduler is busy (that is good)"},
      {"dispatch_stall", "the dispatcher stalled: rare; check for divergent or uniform-datapath-heavy code"},
      {"branch_resolving", "warps wait for branch targets: fewer divergent branches"},
      {"no_instruction", "instruction cache misses: smaller unrolled loops"},
      {"drain", "warps wait for their stores to drain at exit"},
      {"sleeping", "warps sleep (nanosleep or a spin-wait backoff)"},
      {"tex_throttle", "the texture/L1 unit is saturated"},
      {"imc_miss", "constant-cache misses: different threads read different __constant__ addresses"}};
  const auto found = hints.find(reason);
  return found == hints.end() ? "" : found->second;
}

void hints(std::ostringstream& out, const Summary& yours, const Summary& reference) {
  std::vector<std::string> lines;
  if (yours.total_ns > 0 && reference.total_ns > 0 && yours.total_ns > 1.2 * reference.total_ns)
    lines.push_back(format("your call takes %.1fx the reference's time on the GPU", yours.total_ns / reference.total_ns));
  const double your_dram = yours.main ? yours.main->value(dram) : -1;
  const double reference_dram = reference.main ? reference.main->value(dram) : -1;
  if (reference_dram > 60 && your_dram >= 0 && your_dram < 0.6 * reference_dram)
    lines.push_back(format("the reference streams memory at %.0f%% of the peak, ", reference_dram) +
                    format("yours at %.0f%%: the task is memory-bound, so keep more bytes in flight", your_dram));
  if (yours.bank_conflicts > 2 * reference.bank_conflicts + 1000)
    lines.push_back(count(yours.bank_conflicts) + " shared-memory bank conflicts: pad shared arrays or change the "
                    "index so the 32 threads of a warp hit 32 different banks");
  const double your_occupancy = yours.main ? yours.main->value(achieved_occupancy) : -1;
  const double reference_occupancy = reference.main ? reference.main->value(achieved_occupancy) : -1;
  if (your_occupancy >= 0 && reference_occupancy > 0 && your_occupancy < 0.5 * reference_occupancy)
    lines.push_back(format("achieved occupancy %.0f%%", your_occupancy) +
                    format(" against the reference's %.0f%%: fewer warps to hide latency (registers or shared "
                           "memory per block, block size, or too small a grid)", reference_occupancy));
  if (yours.atomic_sectors > 4 * reference.atomic_sectors + 1000)
    lines.push_back(count(yours.atomic_sectors) + " atomic sectors reach L2 (the reference: " +
                    count(reference.atomic_sectors) + "): combine in shared memory or registers first, then "
                    "one atomic per block");
  if (!yours.stalls.empty() && !stall_hint(yours.stalls.front().second).empty())
    lines.push_back("most stalls are " + yours.stalls.front().second + ": " + stall_hint(yours.stalls.front().second));
  if (lines.empty()) return;
  out << "\nWhat to look at:\n";
  for (const std::string& line : lines) out << "  - " << line << "\n";
}

std::string kernel_list(const std::vector<Kernel>& kernels) {
  std::string text;
  for (const Kernel& k : kernels)
    text += (text.empty() ? "" : ", ") + k.name + format(" %.3f ms", k.value(duration, 0) / 1e6);
  return text.empty() ? "none" : text;
}

}  // namespace

double Kernel::value(const std::string& metric, double missing) const {
  const auto found = metrics.find(metric);
  return found == metrics.end() ? missing : found->second;
}

std::vector<std::string> metrics(bool core_only) {
  std::vector<std::string> list = {duration, dram, achieved_occupancy};
  if (core_only) return list;
  list.insert(list.end(), {theoretical_occupancy, conflicts_load, conflicts_store, l2_atomics, l2_reductions,
                           registers, std::string("regex:^") + stall_prefix + ".*_per_issue_active\\.ratio$"});
  return list;
}

std::vector<std::string> command(const std::string& ncu, const std::string& log_pattern, bool core_only) {
  std::string list;
  for (const std::string& metric : metrics(core_only)) list += (list.empty() ? "" : ",") + metric;
  return {ncu, "--csv", "--page", "raw", "--print-units", "base", "--metrics", list, "--log-file", log_pattern};
}

std::vector<Kernel> parse_csv(const std::string& text) {
  std::vector<Kernel> kernels;
  std::vector<std::string> header, units;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '"') continue;
    const std::vector<std::string> fields = csv_fields(line);
    if (fields.front() == "ID") {
      header = fields;
      units.clear();
      continue;
    }
    if (header.empty()) continue;
    if (fields.front().empty()) {  // the row of units under the header
      units = fields;
      continue;
    }
    const std::size_t name_at = column(header, {"Kernel Name", "Function Name", "Demangled Name"});
    if (name_at == std::string::npos || name_at >= fields.size() || is_kit_kernel(fields[name_at])) continue;
    Kernel kernel{short_name(fields[name_at]), {}};
    for (std::size_t i = 0; i < fields.size() && i < header.size(); ++i) {
      double value = 0;
      if (header[i].find("__") == std::string::npos || !number(fields[i], value)) continue;
      kernel.metrics[header[i]] = to_base_unit(value, i < units.size() ? units[i] : "");
    }
    kernels.push_back(kernel);
  }
  return kernels;
}

std::string problem(const std::string& output) {
  if (output.find("ERR_NVGPUCTRPERM") != std::string::npos)
    return "you may not read this GPU's performance counters (ERR_NVGPUCTRPERM). Run as root, or have the "
           "administrator allow it for all users (the nvidia module option NVreg_RestrictProfilingToAdminUsers=0); "
           "see https://developer.nvidia.com/ERR_NVGPUCTRPERM";
  if (output.find("No kernels were profiled") != std::string::npos && output.find("==ERROR==") != std::string::npos)
    return "ncu profiled no kernel";
  for (const char* marker : {"==ERROR== The application returned an error", "==ERROR== Failed to connect",
                             "==ERROR== Profiling is not supported", "==ERROR== Device not supported"}) {
    const std::size_t at = output.find(marker);
    if (at != std::string::npos) return output.substr(at, output.find('\n', at) - at);
  }
  return {};
}

bool rejected_a_metric(const std::string& output) {
  return output.find("Failed to find metric") != std::string::npos ||
         output.find("is not a valid metric") != std::string::npos;
}

std::string side_by_side(const std::vector<Kernel>& your_kernels, const std::vector<Kernel>& reference_kernels,
                         const std::string& title) {
  const Summary yours = summarise(your_kernels), reference = summarise(reference_kernels);
  std::ostringstream out;
  out << title << "\n\n";
  row(out, "", "yours", "reference");
  row(out, "kernels in one call", std::to_string(yours.kernels), std::to_string(reference.kernels));
  row(out, "GPU time, all kernels", format("%.3f ms", yours.total_ns / 1e6), format("%.3f ms", reference.total_ns / 1e6));
  row(out, "longest kernel", yours.main ? yours.main->name : "none", reference.main ? reference.main->name : "none");
  row(out, "  its time", yours.main ? format("%.3f ms", yours.main->value(duration, 0) / 1e6) : "n/a",
      reference.main ? format("%.3f ms", reference.main->value(duration, 0) / 1e6) : "n/a");
  row(out, "  DRAM throughput, % of peak", percent(yours.main, dram), percent(reference.main, dram));
  row(out, "  achieved occupancy", percent(yours.main, achieved_occupancy), percent(reference.main, achieved_occupancy));
  row(out, "  theoretical occupancy", percent(yours.main, theoretical_occupancy),
      percent(reference.main, theoretical_occupancy));
  row(out, "  registers per thread", yours.main ? format("%.0f", yours.main->value(registers, 0)) : "n/a",
      reference.main ? format("%.0f", reference.main->value(registers, 0)) : "n/a");
  for (std::size_t i = 0; i < 3; ++i)
    row(out, i == 0 ? "  top warp stalls" : "", top_stalls(yours, i), top_stalls(reference, i));
  row(out, "shared-memory bank conflicts", count(yours.bank_conflicts), count(reference.bank_conflicts));
  if (yours.atomic_sectors > 0 || reference.atomic_sectors > 0)
    row(out, "atomics reaching L2 (sectors)",
        count(yours.atomic_sectors) + (yours.total_ns > 0 ? format(", %.0f per us", yours.atomic_sectors / (yours.total_ns / 1e3)) : ""),
        count(reference.atomic_sectors) +
            (reference.total_ns > 0 ? format(", %.0f per us", reference.atomic_sectors / (reference.total_ns / 1e3)) : ""));
  out << "\n  your kernels: " << kernel_list(your_kernels) << "\n  the reference's: " << kernel_list(reference_kernels)
      << "\n";
  hints(out, yours, reference);
  out << "\n(Nsight Compute replays each kernel and locks the clocks to base: times are longer than the "
         "grader's; compare the two columns, not with the report.)\n";
  return out.str();
}

}  // namespace grade::profile
