// Lab 03 design record: the reference's call at n = 10^7 taken apart. A copy of the reference
// written by 03-top-k-parts.py leaves parts of the call out by the device variable
// parts_mode (the table below); each mode is timed by 03-top-k-call-timing.cuh (alone, and
// with the host's launch latency hidden), beside the read-only kernel and an empty
// cooperative kernel of the reference's launch shape. Modes 0-2 must give
// the right answer; the others leave it wrong. On a GPU machine, from the repository root:
//   python3 docs/design/03-top-k-parts.py solutions/03-top-k/topk.cu /tmp/topk_parts.cu
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/03-top-k -Iharness/include -I/tmp \
//        -DPARTS='"topk_parts.cu"' -o /tmp/parts docs/design/03-top-k-parts.cu
//   /tmp/parts
#include PARTS
#include <labkit/read_only.cuh>
#include "03-top-k-call-timing.cuh"
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

struct Mode {
  int id;
  const char* name;
  bool answers;  // the output must be the top k
};
const Mode modes[] = {
    {0, "the reference", true},
    {1, "the bound given, no sample", true},
    {2, "the bound given, after the sample and arrival", true},
    {3, "the read alone, nothing kept, an empty finish", false},
    {4, "no read, the arrival, plan and an empty finish", false},
    {6, "no read, the arrival and plan, no finish", false},
    {5, "the launch and the state's zeroing only", false},
    {7, "the launch only: return at entry", false},
};

int main() {
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  uint32_t* sink;
  cudaMalloc(&sink, 4);
  CallTimer timer;
  auto report = [&](const char* name, const std::function<void()>& call, const char* verdict) {
    printf("%-52s call %6.1f us, host latency hidden %6.1f us %s\n", name, timer.alone_us(call),
           timer.hidden_us(call), verdict);
  };

  const size_t n = 10000000;
  std::vector<int32_t> h;
  int32_t* d_in = timeline_input(n, h);
  int32_t* d_out;
  cudaMalloc(&d_out, 8192 * 4);
  std::vector<int32_t> expected = h;
  std::partial_sort(expected.begin(), expected.begin() + 1000, expected.end(), std::greater<int32_t>());

  report("read-only kernel", [&] { labkit::read_only(d_in, n * 4, sink, sms, 0); }, "");
  allow_empty_kernel_shared_memory();
  report("empty cooperative kernel of the reference's shape", [&] { launch_empty_cooperative(sms); }, "");
  int failures = 0;
  for (int k : {10, 1000}) {
    for (const Mode& mode : modes) {
      const int whole = 0;
      cudaMemcpyToSymbol(parts_mode, &whole, sizeof whole);
      topk(d_in, n, k, d_out, 0);  // records the bound it draws, for modes 1 and 2
      cudaMemcpyToSymbol(parts_mode, &mode.id, sizeof mode.id);
      std::vector<int32_t> got(k);
      topk(d_in, n, k, d_out, 0);
      cudaMemcpy(got.data(), d_out, k * 4, cudaMemcpyDeviceToHost);
      const bool right = std::equal(got.begin(), got.end(), expected.begin()) && cudaGetLastError() == cudaSuccess;
      if (mode.answers && !right) ++failures;
      char name[96];
      snprintf(name, sizeof name, "k=%d %d: %s", k, mode.id, mode.name);
      report(name, [&] { topk(d_in, n, k, d_out, 0); }, mode.answers ? (right ? "ok" : "WRONG") : "");
    }
  }
  printf("failures: %d\n", failures);
  return failures != 0;
}
