// Lab 03 design record's timeline: where one topk call's microseconds go at n = 10^7 and 2^28, from
// globaltimer stamps that 03-top-k-timeline.py adds to a copy of the reference (each block's
// entry, its sample tiles in, the bound agreed, its read done; the last block's plan and end,
// all stamped by thread 0), beside the call and the read-only kernel timed by events with the
// L2 flushed before each. It first checks the copy's answers against std::partial_sort on
// inputs that take each of the finish's paths. On a GPU machine, from the repository root:
//   python3 docs/design/03-top-k-timeline.py solutions/03-top-k/topk.cu /tmp/topk_stamped.cu
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/03-top-k -Iharness/include -I/tmp \
//        -DSTAMPED='"topk_stamped.cu"' -o /tmp/timeline docs/design/03-top-k-timeline.cu
//   /tmp/timeline
#include STAMPED
#include <labkit/read_only.cuh>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>
static int failures = 0;
static void check(const char* name, std::vector<int32_t> h, int k) {
  int32_t *d_in, *d_out;
  const size_t n = h.size();
  cudaMalloc(&d_in, n * 4 + 16); cudaMalloc(&d_out, size_t(k) * 4);
  cudaMemcpy(d_in, h.data(), n * 4, cudaMemcpyHostToDevice);
  std::vector<int32_t> got(k);
  for (int rep = 0; rep < 3; ++rep) {
    topk(d_in, n, k, d_out, 0);
    cudaMemcpy(got.data(), d_out, k * 4, cudaMemcpyDeviceToHost);
  }
  std::partial_sort(h.begin(), h.begin() + k, h.end(), std::greater<int32_t>());
  const bool ok = std::equal(got.begin(), got.end(), h.begin()) && cudaGetLastError() == cudaSuccess;
  if (!ok) ++failures;
  printf("check %-28s n=%zu k=%d %s\n", name, n, k, ok ? "ok" : "WRONG");
  cudaFree(d_in); cudaFree(d_out);
}
static void timeline(int k, size_t n = 10000000) {
  std::vector<int32_t> h(n);
  std::mt19937 rng(7);
  for (auto& v : h) v = int32_t(rng());
  int32_t *d_in, *d_out; char* flush; uint32_t* sink;
  cudaMalloc(&d_in, n * 4); cudaMalloc(&d_out, 8192 * 4); cudaMalloc(&flush, 256 << 20); cudaMalloc(&sink, 4);
  cudaMemcpy(d_in, h.data(), n * 4, cudaMemcpyHostToDevice);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> tk, tf;
  unsigned long long st[1024][6];
  for (int rep = 0; rep < 41; ++rep) {
    cudaMemsetAsync(flush, rep, 256 << 20);
    cudaEventRecord(a); topk(d_in, n, k, d_out, 0); cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); tk.push_back(ms * 1000);
    if (rep == 40) cudaMemcpyFromSymbol(st, trace_stamps, sizeof(st));
    cudaMemsetAsync(flush, rep, 256 << 20);
    cudaEventRecord(a); labkit::read_only(d_in, n * 4, sink, sms, 0); cudaEventRecord(b); cudaEventSynchronize(b);
    cudaEventElapsedTime(&ms, a, b); tf.push_back(ms * 1000);
  }
  std::sort(tk.begin(), tk.end()); std::sort(tf.begin(), tf.end());
  printf("n=%zu k=%d call median %.1f us, floor median %.1f us\n", n, k, tk[20], tf[20]);
  unsigned long long t0 = ~0ull;
  int blocks = 0;
  for (int i = 0; i < 1024; ++i) if (st[i][0]) { ++blocks; t0 = std::min(t0, st[i][0]); }
  const char* names[] = {"entry", "sample in", "bound agreed", "read done"};
  for (int j = 0; j < 4; ++j) {
    std::vector<double> v;
    for (int i = 0; i < blocks; ++i) v.push_back((st[i][j] - t0) / 1000.0);
    std::sort(v.begin(), v.end());
    printf("  %-15s min %6.2f  median %6.2f  max %6.2f us\n", names[j], v[0], v[v.size() / 2], v.back());
  }
  for (int i = 0; i < blocks; ++i)
    if (st[i][4] > st[i][3] && st[i][4] - t0 < 1000000)
      printf("  last block %d: read done %.2f, planned %.2f, finished %.2f us\n", i, (st[i][3] - t0) / 1000.0,
             (st[i][4] - t0) / 1000.0, (st[i][5] - t0) / 1000.0);
  cudaFree(d_in); cudaFree(d_out); cudaFree(flush);
}
int main() {
  std::mt19937 rng(11);
  auto make = [&](size_t n, std::function<int32_t(size_t)> f) { std::vector<int32_t> v(n); for (size_t i = 0; i < n; ++i) v[i] = f(i); return v; };
  check("random", make(10000000, [&](size_t) { return int32_t(rng()); }), 10);
  check("random", make(10000000, [&](size_t) { return int32_t(rng()); }), 1000);
  check("random", make(10000000, [&](size_t) { return int32_t(rng()); }), 4096);
  check("random", make(10000000, [&](size_t) { return int32_t(rng()); }), 5000);
  check("random", make(1000003, [&](size_t) { return int32_t(rng()); }), 49);
  check("few distinct 0..99", make(10000000, [&](size_t) { return int32_t(rng() % 100); }), 10);
  check("few distinct 0..99", make(1000000, [&](size_t) { return int32_t(rng() % 100); }), 1024);
  check("ascending", make(10000000, [&](size_t i) { return int32_t(i) - 5000000; }), 48);
  check("ascending", make(10000000, [&](size_t i) { return int32_t(i) - 5000000; }), 1000);
  check("descending", make(1000000, [&](size_t i) { return -int32_t(i); }), 10);
  check("all equal", make(1000000, [&](size_t) { return 7; }), 10);
  check("narrow range (crowded bins)", make(10000000, [&](size_t) { return int32_t(rng() % 3000); }), 1000);
  check("negative narrow", make(1000003, [&](size_t) { return int32_t(INT32_MIN + int32_t(rng() % 3648)); }), 10);
  check("small", make(7, [&](size_t) { return int32_t(rng()); }), 7);
  check("random 2^26", make(1 << 26, [&](size_t) { return int32_t(rng()); }), 1000);
  timeline(10);
  timeline(1000);
  timeline(10);
  timeline(10, size_t(1) << 28);
  timeline(1000, size_t(1) << 28);
  printf("failures: %d\n", failures);
  return failures != 0;
}
