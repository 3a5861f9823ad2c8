// Tries to write where the grader keeps its state: its own saved result, the folders of the
// other submissions beside it, the gradebook's folder, /tmp and /dev/shm. It computes the
// histogram correctly (the chapter's shared-memory kernel) unless one of those writes went
// through, in which case it says so by answering wrongly on purpose. Every write is refused
// by the sandbox, so it must score full correctness.
#include "histogram.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

bool try_write(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) return false;
  (void)!write(fd, "{\"forged\": true}\n", 17);
  close(fd);
  std::fprintf(stderr, "write-grader-files: wrote %s\n", path.c_str());
  return true;
}

std::string parent(const std::string& path) { return path.substr(0, path.rfind('/')); }

// The module sits in WORK/<submission>/<lab>/module.so, WORK under the build folder, which
// holds the reports (build/reports/); the kit's own grading/ folder is beside the build.
bool any_write_went_through() {
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&any_write_went_through), &info);
  const std::string lab_dir = parent(info.dli_fname ? info.dli_fname : "/nonexistent/x");
  bool wrote = try_write(lab_dir + "/result.json") | try_write(lab_dir + "/run.log");
  const std::string class_dir = parent(parent(lab_dir));
  if (DIR* dir = opendir(class_dir.c_str())) {
    while (dirent* entry = readdir(dir))
      if (entry->d_name[0] != '.') wrote |= try_write(class_dir + "/" + entry->d_name + "/01-histogram/result.json");
    closedir(dir);
  }
  std::string up = lab_dir;
  for (int i = 0; i < 8 && up.size() > 1; ++i, up = parent(up))
    wrote |= try_write(up + "/reports/PWNED") | try_write(up + "/grading/PWNED");
  wrote |= try_write("/tmp/labkit-pwned") | try_write("/dev/shm/labkit-pwned");
  return wrote;
}

__global__ void count_shared(const uint8_t* in, size_t n, uint32_t* bins) {
  __shared__ uint32_t local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    atomicAdd(&local[in[i]], 1u);
  __syncthreads();
  atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  static const bool wrote = any_write_went_through();
  cudaMemsetAsync(d_bins, 0, 256 * sizeof(uint32_t), stream);
  count_shared<<<264, 256, 0, stream>>>(d_in, n, d_bins);
  if (wrote) cudaMemsetAsync(d_bins, 0xff, sizeof(uint32_t), stream);  // the canary: a wrong bin 0
}
