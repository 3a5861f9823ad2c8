// Says whether a CUDA GPU can be used here, in well under a second: tests that need one run
// behind it (needs-gpu.sh) instead of compiling a whole class before finding out.
//   gpu-probe   exit 0 with the GPU's name, or 77 with the reason there is none
#include "labkit/device.h"

#include <cstdio>

int main() {
  if (const auto reason = labkit::why_no_gpu()) {
    std::printf("SKIPPED: %s: this test needs a CUDA GPU\n", reason->c_str());
    return 77;  // Meson's "skipped"
  }
  std::printf("GPU: %s\n", labkit::current_device().name.c_str());
  return 0;
}
