// Lab 03 design record: the floors under the reference's call. Two parts, each timed as the
// timeline times a call (events, the L2 flushed by a memset before each, median of 41), alone
// and behind a 50 us spin kernel that hides the host's launch latency (less the spin kernel's
// own time), two rounds each:
//  1. The launch: an empty kernel of the reference's shape by a plain and by a cooperative
//     launch, the kit's read-only kernel, and the reference at n = 10^7, k = 10 and 1000.
//  2. The read: read-only kernels of the reference's launch shape (2 blocks of 512 threads an
//     SM, tiles of 512 x 4 16-byte vectors) beside the kit's read-only kernel, at n = 10^7 and
//     2^28: each block reading a run of whole tiles, as the reference does, or tiles dealt
//     round the grid, with 1-3 tiles in flight a step.
// The timing is 03-top-k-call-timing.cuh's. On a GPU machine, from the repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/03-top-k -Iharness/include -o /tmp/floors docs/design/03-top-k-floors.cu
//   /tmp/floors
#include "../../solutions/03-top-k/topk.cu"
#include <labkit/read_only.cuh>
#include "03-top-k-call-timing.cuh"
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>
constexpr int read_threads = 512, read_vectors_per_thread = 4;
constexpr unsigned read_tile_vectors = read_threads * read_vectors_per_thread;
__device__ __forceinline__ uint32_t fold(int4 v) { return v.x ^ v.y ^ v.z ^ v.w; }
// Runs of whole tiles per block (the reference's layout), `per_step` tiles in flight per step.
template <int per_step>
__global__ void __launch_bounds__(read_threads, 2) runs_kernel(const int4* in, unsigned count, uint32_t* sink) {
  const unsigned tiles = (count + read_tile_vectors - 1) / read_tile_vectors;
  const unsigned per_block = (tiles + gridDim.x - 1) / gridDim.x;
  uint32_t acc = 0;
  for (unsigned t = 0; t < per_block; t += per_step) {
    int4 v[per_step][read_vectors_per_thread];
#pragma unroll
    for (int s = 0; s < per_step; ++s)
#pragma unroll
      for (int u = 0; u < read_vectors_per_thread; ++u) {
        const size_t i = (size_t(blockIdx.x) * per_block + t + s) * read_tile_vectors + threadIdx.x + u * read_threads;
        v[s][u] = (t + s < per_block && i < count) ? __ldcs(&in[i]) : make_int4(0, 0, 0, 0);
      }
#pragma unroll
    for (int s = 0; s < per_step; ++s)
#pragma unroll
      for (int u = 0; u < read_vectors_per_thread; ++u) acc ^= fold(v[s][u]);
  }
  if (acc == 0x7fffffffu) *sink = acc;
}
// Tiles dealt round the grid: block b reads tiles b, b + grid, ...
template <int per_step>
__global__ void __launch_bounds__(read_threads, 2) dealt_kernel(const int4* in, unsigned count, uint32_t* sink) {
  const unsigned tiles = (count + read_tile_vectors - 1) / read_tile_vectors;
  uint32_t acc = 0;
  for (unsigned t = blockIdx.x; t < tiles; t += per_step * gridDim.x) {
    int4 v[per_step][read_vectors_per_thread];
#pragma unroll
    for (int s = 0; s < per_step; ++s)
#pragma unroll
      for (int u = 0; u < read_vectors_per_thread; ++u) {
        const size_t i = size_t(t + s * gridDim.x) * read_tile_vectors + threadIdx.x + u * read_threads;
        v[s][u] = i < count ? __ldcs(&in[i]) : make_int4(0, 0, 0, 0);
      }
#pragma unroll
    for (int s = 0; s < per_step; ++s)
#pragma unroll
      for (int u = 0; u < read_vectors_per_thread; ++u) acc ^= fold(v[s][u]);
  }
  if (acc == 0x7fffffffu) *sink = acc;
}
struct Case {
  const char* name;
  std::function<void()> call;
};
static void time_cases(const char* prefix, const std::vector<Case>& cases, CallTimer& timer) {
  for (int round = 0; round < 2; ++round)
    for (auto& c : cases) {
      const float alone = timer.alone_us(c.call), hidden = timer.hidden_us(c.call);
      printf("%s %-30s call %7.1f us, host latency hidden %7.1f us\n", prefix, c.name, alone, hidden);
    }
}
static void launch_part(CallTimer& timer, uint32_t* sink, int sms) {
  const size_t n = 10000000;
  std::vector<int32_t> h;
  int32_t* d_in = timeline_input(n, h);
  int32_t* d_out;
  cudaMalloc(&d_out, 8192 * 4);
  allow_empty_kernel_shared_memory();
  time_cases("launch", {
      {"empty, plain launch", [&] { empty_kernel<<<2 * sms, 512, 80 << 10>>>(nullptr); }},
      {"empty, cooperative launch", [&] { launch_empty_cooperative(sms); }},
      {"read-only kernel", [&] { labkit::read_only(d_in, n * 4, sink, sms, 0); }},
      {"topk k=10", [&] { topk(d_in, n, 10, d_out, 0); }},
      {"topk k=1000", [&] { topk(d_in, n, 1000, d_out, 0); }}}, timer);
  cudaFree(d_in); cudaFree(d_out);
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  uint32_t* sink;
  cudaMalloc(&sink, 4);
  CallTimer timer;
  launch_part(timer, sink, sms);
  for (size_t n : {size_t(10000000), size_t(1) << 28}) {
    int4* in; cudaMalloc(&in, n * 4); cudaMemset(in, 1, n * 4);
    const unsigned count = unsigned(n / 4);
    const unsigned grid = 2 * sms;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "read n=%zu", n);
    time_cases(prefix, {
        {"read-only kernel (the floor)", [&] { labkit::read_only(in, n * 4, sink, sms, 0); }},
        {"runs of tiles, 2 a step", [&] { runs_kernel<2><<<grid, read_threads>>>(in, count, sink); }},
        {"runs of tiles, 1 a step", [&] { runs_kernel<1><<<grid, read_threads>>>(in, count, sink); }},
        {"runs of tiles, 3 a step", [&] { runs_kernel<3><<<grid, read_threads>>>(in, count, sink); }},
        {"tiles dealt, 2 a step", [&] { dealt_kernel<2><<<grid, read_threads>>>(in, count, sink); }},
        {"tiles dealt, 1 a step", [&] { dealt_kernel<1><<<grid, read_threads>>>(in, count, sink); }}}, timer);
    cudaFree(in);
  }
  printf("errors: %s\n", cudaGetErrorString(cudaGetLastError()));
}
