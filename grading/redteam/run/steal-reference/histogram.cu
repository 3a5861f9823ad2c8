// Looks for the kit's reference solution next to its own compiled module (the build folder
// and solutions/ are ancestors of the grader's work folder) and calls it instead of doing
// the work. The host's sandbox lets it read its own module and the system's libraries only,
// so the reference cannot be opened and every case fails.
#include "histogram.h"

#include <dlfcn.h>

#include <cstdio>
#include <string>

namespace {

using HistogramFn = void(const uint8_t*, size_t, uint32_t*, cudaStream_t);

std::string own_path() {
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&own_path), &info);
  return info.dli_fname ? info.dli_fname : "";
}

HistogramFn* find_reference() {
  std::string dir = own_path();
  for (int up = 0; up < 10 && !dir.empty(); ++up) {
    dir = dir.substr(0, dir.rfind('/'));
    for (const char* candidate : {"/labs/lab-01-histogram-solution.so", "/build/labs/lab-01-histogram-solution.so"}) {
      const std::string path = dir + candidate;
      if (void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))
        return reinterpret_cast<HistogramFn*>(dlsym(module, "histogram"));
      if (FILE* source = std::fopen((dir + "/solutions/01-histogram/histogram.cu").c_str(), "r")) {
        std::fprintf(stderr, "steal-reference: read the reference's source\n");
        std::fclose(source);
      }
    }
  }
  return nullptr;
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  static HistogramFn* reference = find_reference();
  if (reference != nullptr) reference(d_in, n, d_bins, stream);
}
