// Grader design experiment: does the next call time the same after an L2 flush made in another
// process (another CUDA context) as after the same flush made in its own?
//
// Not part of the kit's build. The grader times the reference in its own process, right after
// its own flush (harness/src/runner/timing.cu, prepare_device_for_sample), and a submission's
// call in the submission's host process, after the grader's flush in the grader's context. Here
// a parent process plays the grader and a child the host: the child times by events, in a loop
// the parent drives over a pipe, the read-only kernel and lab 03's reference (the held kernel at
// n = 10^7 for k = 10 and 1000; the general kernel at n = 10^7 - 1, which the held kernel does
// not take), each call after one way of preparing the L2:
//   parent's flush      the grader's write flush (twice the L2) in the parent, as for a submission
//   child's flush       the same flush in the child, as for the reference
//   child's flush, clean read   that flush, then the read-only kernel over a clean buffer
//   parent's then child's       both flushes, the parent's first
//   child's cached read only    a read of a clean buffer (twice the L2) with cached loads
//   child's flush, cached read  the write flush, then that cached read
// Medians of 41 calls for each, two rounds.
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/03-top-k -Iharness/include \
//        -o timing-across-processes docs/design/timing-across-processes.cu
//   ./timing-across-processes
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <labkit/read_only.cuh>
#include <random>
#include <vector>

#include "../../solutions/03-top-k/topk.cu"

namespace {

constexpr size_t n = 10000000;
constexpr int samples = 41;
const char* const subjects[] = {"read-only kernel", "reference k = 10", "reference k = 1000", "general kernel k = 10"};
enum Preparation { parent_flush, child_flush, child_flush_clean_read, both_flushes, cached_read, flush_cached_read };
const char* const preparations[] = {"parent's flush",         "child's flush",
                                    "child's flush, clean read", "parent's then child's",
                                    "child's cached read only", "child's flush, cached read"};

// The grader's flush: writing twice the L2 evicts what the previous call left there.
__global__ void write_flush_kernel(int4* buffer, size_t count, int salt) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    buffer[i] = make_int4(salt, salt, salt, salt);
}
// Loads with the default caching, so that the clean lines they bring replace the written ones.
__global__ void cached_read_kernel(const int4* buffer, size_t count, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    acc ^= buffer[i].x;
  if (acc == 0x7fffffff) *sink = acc;
}

struct Flusher {
  int4* buffer = nullptr;
  size_t count = 0;
  int sms = 0, salt = 0;
  Flusher() {
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    count = 2 * size_t(l2) / sizeof(int4) + 1;
    cudaMalloc(&buffer, count * sizeof(int4));
  }
  void flush() {
    write_flush_kernel<<<sms * 4, 512>>>(buffer, count, ++salt);
    cudaCtxResetPersistingL2Cache();
    cudaDeviceSynchronize();
  }
};

// The host's side: prepares the L2 as told, times one call by events, replies with the time.
void child(int commands, int replies) {
  std::vector<int32_t> values(n);
  std::mt19937 rng(5);
  for (int32_t& v : values) v = int32_t(rng());
  int32_t *in, *out;
  uint32_t* sink;
  cudaMalloc(&in, n * sizeof(int32_t));
  cudaMalloc(&out, 1000 * sizeof(int32_t));
  cudaMalloc(&sink, sizeof(uint32_t));
  cudaMemcpy(in, values.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice);
  Flusher flusher;
  int4* clean;
  cudaMalloc(&clean, flusher.count * sizeof(int4));
  cudaMemset(clean, 0, flusher.count * sizeof(int4));
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  auto call = [&](int subject) {
    if (subject == 0)
      labkit::read_only(in, n * sizeof(int32_t), sink, flusher.sms, stream);
    else
      topk(in, subject == 3 ? n - 1 : n, subject == 2 ? 1000 : 10, out, stream);
  };
  for (int subject = 0; subject < 4; ++subject)
    for (int warmup = 0; warmup < 3; ++warmup) call(subject);
  cudaDeviceSynchronize();
  int command[2];  // subject, preparation
  while (read(commands, command, sizeof command) == sizeof command) {
    const int how = command[1];
    if (how == child_flush || how == child_flush_clean_read || how == both_flushes || how == flush_cached_read)
      flusher.flush();
    if (how == child_flush_clean_read)
      labkit::read_only(reinterpret_cast<int32_t*>(clean), flusher.count * sizeof(int4), sink, flusher.sms, stream);
    if (how == cached_read || how == flush_cached_read)
      cached_read_kernel<<<flusher.sms * 4, 512, 0, stream>>>(clean, flusher.count, reinterpret_cast<int*>(sink));
    cudaDeviceSynchronize();
    cudaEventRecord(start, stream);
    call(command[0]);
    cudaEventRecord(stop, stream);
    cudaDeviceSynchronize();
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (cudaGetLastError() != cudaSuccess) ms = -1;
    if (write(replies, &ms, sizeof ms) != sizeof ms) return;
  }
}

}  // namespace

int main() {
  int commands[2], replies[2];
  if (pipe(commands) != 0 || pipe(replies) != 0) return 1;
  const pid_t host = fork();  // before either side starts CUDA
  if (host == 0) {
    close(commands[1]);
    close(replies[0]);
    child(commands[0], replies[1]);
    return 0;
  }
  close(commands[0]);
  close(replies[1]);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Flusher flusher;
  for (int round = 0; round < 2; ++round)
    for (int subject = 0; subject < 4; ++subject) {
      printf("round %d %-22s", round, subjects[subject]);
      for (int how = parent_flush; how <= flush_cached_read; ++how) {
        std::vector<float> us;
        for (int i = 0; i < samples; ++i) {
          if (how == parent_flush || how == both_flushes) flusher.flush();
          const int command[2] = {subject, how};
          float ms = 0;
          if (write(commands[1], command, sizeof command) != sizeof command ||
              read(replies[0], &ms, sizeof ms) != sizeof ms)
            return 1;
          us.push_back(ms * 1000);
        }
        std::sort(us.begin(), us.end());
        printf(" | %s %6.2f", preparations[how], us[samples / 2]);
      }
      printf("\n");
    }
  close(commands[1]);
  waitpid(host, nullptr, 0);
  return 0;
}
