// A background load on the CUDA driver from one GPU, for grading/tools/driver-contention.sh:
//   driver-load contexts|alloc SECONDS
// `contexts` makes a context and destroys it, again and again (what a starting run or host
// does); `alloc` maps 256 MiB, touches it and frees it, again and again.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void make_and_destroy_context() {
  cudaFree(nullptr);
  cudaDeviceReset();
}

void map_and_free() {
  constexpr std::size_t bytes = std::size_t(256) << 20;
  void* memory = nullptr;
  if (cudaMalloc(&memory, bytes) != cudaSuccess) return;
  cudaMemset(memory, 0, std::size_t(1) << 20);
  cudaFree(memory);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "contexts") != 0 && std::strcmp(argv[1], "alloc") != 0)) {
    std::fprintf(stderr, "usage: driver-load contexts|alloc SECONDS\n");
    return 2;
  }
  const bool contexts = std::strcmp(argv[1], "contexts") == 0;
  const double seconds = std::atof(argv[2]);
  const auto start = std::chrono::steady_clock::now();
  long rounds = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    contexts ? make_and_destroy_context() : map_and_free();
    ++rounds;
  }
  std::printf("%s: %ld rounds in %.0f s\n", argv[1], rounds, seconds);
}
