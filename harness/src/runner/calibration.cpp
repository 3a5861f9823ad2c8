#include "labkit/calibration.h"

#include "labkit/cuda_check.h"
#include "labkit/device.h"
#include "labkit/fingerprint.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace labkit {

namespace {

std::string driver_version() {
  std::ifstream version("/proc/driver/nvidia/version");
  std::string line;
  std::getline(version, line);
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
  const auto release = line.find("  Release");
  const auto start = line.rfind(' ', release == std::string::npos ? line.size() : release - 1);
  if (release != std::string::npos && start != std::string::npos) return line.substr(start + 1, release - start - 1);
  int cuda_driver = 0;
  cudaDriverGetVersion(&cuda_driver);
  return "CUDA " + std::to_string(cuda_driver);
}

int max_sm_clock_mhz() {
  int khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, current_device().ordinal));
  return khz / 1000;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", std::localtime(&now));
  return text;
}

}  // namespace

std::string calibration_key(const std::string& kit_fingerprint) {
  return current_device().name + " | driver " + driver_version() + " | " + std::to_string(max_sm_clock_mhz()) +
         " MHz | kit " + kit_fingerprint;
}


Calibration::Calibration(const std::string& folder, const std::string& lab, const std::string& key) {
  std::filesystem::create_directories(folder);
  path_ = (std::filesystem::path(folder) / (lab + "-" + hex(hash_bytes(key)) + ".json")).string();
  std::ifstream in(path_);
  if (in) data_ = nlohmann::json::parse(in, nullptr, false);
  if (data_.is_discarded() || !data_.is_object() || data_.value("key", "") != key)
    data_ = {{"key", key}, {"cases", nlohmann::json::object()}};
}

std::optional<nlohmann::json> Calibration::reference(const std::string& case_name) const {
  if (!enabled() || !data_["cases"].contains(case_name)) return std::nullopt;
  return data_["cases"][case_name];
}

void Calibration::store(const std::string& case_name, nlohmann::json timing) {
  if (!enabled()) return;
  timing["measured_at"] = today();
  data_["cases"][case_name] = timing;
  save();
}

std::optional<double> Calibration::peak_read_gbps() const {
  if (!enabled() || !data_.contains("peak_read_gbps")) return std::nullopt;
  return data_["peak_read_gbps"].get<double>();
}

void Calibration::store_peak_read_gbps(double gbps) {
  if (!enabled()) return;
  data_["peak_read_gbps"] = gbps;
  save();
}

std::optional<double> Calibration::empty_call_ceiling_ms(const std::string& place,
                                                         const std::string& case_name) const {
  if (!enabled() || !data_.contains("empty_call_ceiling_ms")) return std::nullopt;
  const nlohmann::json& places = data_.at("empty_call_ceiling_ms");
  if (!places.contains(place) || !places.at(place).contains(case_name)) return std::nullopt;
  return places.at(place).at(case_name).get<double>();
}

void Calibration::store_empty_call_ceiling_ms(const std::string& place, const std::string& case_name, double ms) {
  if (!enabled()) return;
  data_["empty_call_ceiling_ms"][place][case_name] = ms;
  save();
}

void Calibration::save() const {
  // Another GPU's runner may write the same file: each writes its own temporary, then renames.
  const std::string temporary = path_ + ".tmp" + std::to_string(::getpid());
  std::ofstream(temporary) << data_.dump(2);
  std::filesystem::rename(temporary, path_);
}

}  // namespace labkit
