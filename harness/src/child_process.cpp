#include "child_process.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace labkit::child {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string make_scratch(const std::string& kind) {
  std::string pattern = "/tmp/labkit-" + kind + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a scratch folder in /tmp");
  if (geteuid() == 0 && chown(pattern.c_str(), nobody, nobody) != 0)
    throw std::runtime_error("cannot hand the scratch folder to nobody");
  return pattern;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

std::vector<std::string> base_environment(const std::string& scratch, char** ours) {
  std::vector<std::string> variables = {"HOME=" + scratch, "TMPDIR=" + scratch, "LANG=C.UTF-8",
                                        "CUDA_CACHE_PATH=" + scratch + "/cuda-cache"};
  for (char** entry = ours; entry != nullptr && *entry != nullptr; ++entry)
    for (const char* name : {"PATH=", "LD_LIBRARY_PATH=", "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER="})
      if (starts_with(*entry, name)) variables.emplace_back(*entry);
  return variables;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace labkit::child
