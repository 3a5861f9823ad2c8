// `grade profile`: Nsight Compute's measurements of the student's kernels and the reference's,
// one call of the lab's main performance case each, read from ncu's CSV (raw page) and put
// side by side with what to look at.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace grade::profile {

struct Kernel {
  std::string name;                       // without "void " and its argument list
  std::map<std::string, double> metrics;  // metric name → value in base units (ns, %, counts)
  double value(const std::string& metric, double missing = -1) const;
};

// The metrics asked of ncu (Hopper names). `core_only`: the few every ncu version knows, for a
// second try when ncu rejected a name of the full list.
std::vector<std::string> metrics(bool core_only);

// ncu's options before the host's own command line; "{start}" in log_pattern is replaced by the
// host's start ordinal (remote.h).
std::vector<std::string> command(const std::string& ncu, const std::string& log_pattern, bool core_only);

// Rows of ncu's `--csv --page raw` output; lines that are not CSV (==PROF==, warnings) are
// skipped, and the kit's own kernels in the host (the shared-memory poisoner, the spin kernel)
// are left out.
std::vector<Kernel> parse_csv(const std::string& text);

// What kept ncu from profiling, in words a student can act on ("" when nothing did): no
// permission to read the GPU's counters (ERR_NVGPUCTRPERM), no supported device...
std::string problem(const std::string& ncu_output);

// ncu did not know a metric of the list (an older version): try again with the core metrics.
bool rejected_a_metric(const std::string& ncu_output);

// The side-by-side summary and the hints drawn from it.
std::string side_by_side(const std::vector<Kernel>& yours, const std::vector<Kernel>& reference,
                         const std::string& title);

}  // namespace grade::profile
