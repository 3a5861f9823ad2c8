// Unbounded recursion on the host.
#include "histogram.h"

static size_t depth(size_t n, volatile char* previous) {
  volatile char frame[4096];
  frame[0] = previous ? previous[0] : 1;
  return n == 0 ? 0 : 1 + depth(n + 1, frame);  // n never returns to 0
}

extern "C" void histogram(const uint8_t*, size_t n, uint32_t*, cudaStream_t) { depth(n + 1, nullptr); }
