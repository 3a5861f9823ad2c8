// Reference timings kept between runs, so a class is not charged for timing the reference
// solution again for every submission. One file per lab and key in the calibration folder;
// the key is the GPU's name, the driver, the SM clock and a fingerprint of the kit's build
// (the checks, the reference solution, the dataset), so a change to any of them starts over.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace labkit {

// "NVIDIA H100 80GB HBM3 | driver 580.159.04 | 1980 MHz | kit 0123456789abcdef". The grader
// fingerprints the kit's sources (so a rebuild of the same sources keeps the cache); run
// alone, the runner fingerprints its own binary, the reference module and the dataset.
std::string calibration_key(const std::string& kit_fingerprint);

class Calibration {
public:
  Calibration() = default;
  Calibration(const std::string& folder, const std::string& lab, const std::string& key);

  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::optional<nlohmann::json> reference(const std::string& case_name) const;
  // Records a case's reference timing and writes the file at once (whole or not at all).
  void store(const std::string& case_name, nlohmann::json timing);
  // The GPU's measured read bandwidth (the "% of peak" base), kept the same way.
  std::optional<double> peak_read_gbps() const;
  void store_peak_read_gbps(double gbps);
  // A case's empty-call ceiling (measure_empty_call_ceiling_ms) at one place, a machine and
  // its GPU (the round trip runs through that machine's processes and that GPU's link, which
  // a GPU model does not fix), kept the same way: measured once with no submission's process
  // alive, it spares every later submission's run a host restarted, and a CUDA context made,
  // per timed case.
  std::optional<double> empty_call_ceiling_ms(const std::string& place, const std::string& case_name) const;
  void store_empty_call_ceiling_ms(const std::string& place, const std::string& case_name, double ms);

private:
  void save() const;

  std::string path_;
  nlohmann::json data_;
};

}  // namespace labkit
