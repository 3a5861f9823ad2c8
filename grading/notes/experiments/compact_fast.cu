// Lab 07 experiment: the reference compaction (solutions/07-compact/compact.cu, included
// unchanged) beside variants of its select kernel and cub::DeviceSelect::If, in one process.
//
// Knobs (struct Knobs): threads x float4 loads per thread (tile = threads * rows * 4), the
// __launch_bounds__ minimum blocks per SM, how a block gets its tile, how it loads the input,
// and how it writes the staged outputs.
// - tile: `ticket` (the reference: an atomic ticket, then a barrier, then the loads),
//   `spec` (the loads of tile blockIdx.x start while the ticket's atomic is in flight, and the
//   ticket is shared at the barrier the warp totals need anyway; on the rare block whose ticket
//   is not its blockIdx.x the tile is loaded again: the tile index is still the ticket, so the
//   look-back cannot deadlock), `bidx` (tile = blockIdx.x with no ticket, CUB's way: relies
//   on blocks starting in index order; measured only as a bound).
// - load: default, `ldcs` (ld.global.cs: evict first), `ef` (L1::no_allocate + an L2
//   evict_first policy), `pf` (ld.global.L2::256B: a 256-byte L2 prefetch per access).
// - store: `loop` (the reference's strided scalar loop), `loopcs` (st.global.cs), `vec`
//   (float4 stores on the aligned body of the output range), `veccs`.
//
//   nvcc -O3 -std=c++17 -lineinfo -gencode=arch=compute_90a,code=sm_90a -Ilabs/07-compact \
//        grading/notes/experiments/compact_fast.cu -o compact_fast.bin
//   compact_fast.bin check           every variant on every size and distribution (bit-exact,
//                                    count, nothing written past count, input unchanged), twice
//   compact_fast.bin time [rounds]   every variant and CUB at 2^24 and 2^28, round-robin, L2
//                                    flushed before each sample, median
#include "../../../solutions/07-compact/compact.cu"

#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fast {

#define CHECK(call) check(call, #call, __LINE__)
void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "line %d: %s: %s\n", line, what, cudaGetErrorString(e));
    std::exit(1);
  }
}

enum TileMode { tile_ticket = 0, tile_spec = 1, tile_bidx = 2 };
enum LoadMode { load_default = 0, load_cs = 1, load_ef = 2, load_pf = 3 };
enum StoreMode { store_loop = 0, store_loopcs = 1, store_vec = 2, store_veccs = 3 };

template <int Threads, int Rows, int MinBlocks, int Tile, int Load, int Store>
struct Knobs {
  static constexpr int threads = Threads, rows = Rows, min_blocks = MinBlocks;
  static constexpr int tile = Tile, load = Load, store = Store;
  static constexpr int warps = threads / warp_size;
  static constexpr int warp_items = rows * row_items;
  static constexpr int tile_items = warps * warp_items;
  static constexpr int per_thread = tile_items / threads;
  static constexpr size_t staged_bytes = size_t(tile_items) * sizeof(float);
};

__device__ unsigned int ticket_mismatches;  // spec: blocks whose ticket was not their index

__device__ __forceinline__ u64 policy_evict_first() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

template <int load>
__device__ __forceinline__ uint4 load4(const float* p, u64 policy) {
  uint4 v;
  if (load == load_cs) {
    const float4 x = __ldcs(reinterpret_cast<const float4*>(p));
    v = make_uint4(__float_as_uint(x.x), __float_as_uint(x.y), __float_as_uint(x.z), __float_as_uint(x.w));
  } else if (load == load_ef) {
    asm("ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "l"(policy));
  } else if (load == load_pf) {
    asm("ld.global.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else {
    v = *reinterpret_cast<const uint4*>(p);
  }
  return v;
}

template <class K>
__device__ __forceinline__ void load_tile_slice(const float* in, size_t n, size_t first, bool full_tile, int lane,
                                                u64 policy, Slice<K::rows>& bits) {
  if (!full_tile) {
    load_slice<K::rows>(in, n, first, false, lane, bits);
    return;
  }
  const float* source = in + first + 4 * lane;
#pragma unroll
  for (int j = 0; j < K::rows; ++j) {
    const uint4 x = load4<K::load>(source + j * row_items, policy);
    bits[j][0] = x.x, bits[j][1] = x.y, bits[j][2] = x.z, bits[j][3] = x.w;
  }
}

template <bool cs>
__device__ __forceinline__ void store1(float* p, float x) {
  if (cs) __stcs(p, x); else *p = x;
}
template <bool cs>
__device__ __forceinline__ void store4(float4* p, float4 x) {
  if (cs) __stcs(p, x); else *p = x;
}

// staged[0 .. count) to out[0 .. count), nothing else.
template <class K>
__device__ __forceinline__ void write_out(float* out, const float* staged, u32 count) {
  constexpr bool cs = K::store == store_loopcs || K::store == store_veccs;
  const u32 t = threadIdx.x;
  if (K::store == store_loop || K::store == store_loopcs) {
    for (u32 i = t; i < count; i += K::threads) store1<cs>(out + i, staged[i]);
    return;
  }
  const u32 misaligned = u32(reinterpret_cast<uintptr_t>(out) / sizeof(float)) % 4;
  const u32 head = min(count, (4u - misaligned) % 4);
  const u32 quads = (count - head) / 4;
  const u32 tail_first = head + 4 * quads;
  if (t < head) store1<cs>(out + t, staged[t]);
  if (t < count - tail_first) store1<cs>(out + tail_first + t, staged[tail_first + t]);
  float4* body = reinterpret_cast<float4*>(out + head);
  const float* source = staged + head;
#pragma unroll
  for (u32 j = 0; j < u32(K::per_thread / 4); ++j) {
    const u32 q = j * K::threads + t;
    if (q < quads) store4<cs>(body + q, make_float4(source[4 * q], source[4 * q + 1], source[4 * q + 2], source[4 * q + 3]));
  }
}

}  // namespace fast

namespace lab07_fast {
using namespace fast;

template <class K>
__global__ void __launch_bounds__(K::threads, K::min_blocks) compact_kernel(SelectArgs a) {
  extern __shared__ float4 dynamic_shared[];
  float* staged = reinterpret_cast<float*>(dynamic_shared);
  __shared__ u32 warp_totals[K::warps];
  __shared__ u32 ticket_shared, kept_before_tile_shared;
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const u64 policy = K::load == load_ef ? policy_evict_first() : 0;

  int tile = K::tile == tile_ticket ? take_tile(a.tile_counter, a.tile_count) : int(blockIdx.x);
  u32 ticket = 0;
  if (K::tile == tile_spec && threadIdx.x == 0) ticket = atomicAdd(a.tile_counter, 1u);

  Slice<K::rows> bits;
  size_t first = size_t(tile) * K::tile_items + size_t(warp) * K::warp_items;
  load_tile_slice<K>(a.in, a.n, first, (size_t(tile) + 1) * K::tile_items <= a.n, lane, policy, bits);
  SliceCounts<K::rows> counts;
  count_slice(bits, lane, counts);
  if (lane == 0) warp_totals[warp] = counts.slice_total;
  if (K::tile == tile_spec && threadIdx.x == 0) {
    if (ticket == a.tile_count - 1) atomicExch(a.tile_counter, 0u);
    ticket_shared = ticket;
  }
  __syncthreads();
  if (K::tile == tile_spec) {
    const int ticketed = int(ticket_shared);
    if (ticketed != tile) {  // the same for the whole block
      if (threadIdx.x == 0) atomicAdd(&ticket_mismatches, 1u);
      tile = ticketed;
      first = size_t(tile) * K::tile_items + size_t(warp) * K::warp_items;
      load_tile_slice<K>(a.in, a.n, first, (size_t(tile) + 1) * K::tile_items <= a.n, lane, policy, bits);
      count_slice(bits, lane, counts);
      // No thread reads warp_totals between the barrier above and the one below.
      if (lane == 0) warp_totals[warp] = counts.slice_total;
      __syncthreads();
    }
  }
  u32 warp_prefix = 0, tile_kept = 0;
#pragma unroll
  for (int w = 0; w < K::warps; ++w) {
    if (w == warp) warp_prefix = tile_kept;
    tile_kept += warp_totals[w];
  }
  stage_slice<false>(staged, first, a.n, warp * K::warp_items, lane, warp_prefix, tile_kept, bits, counts);

  if (warp == 0) {
    if (lane == 0) publish_aggregate(a.status, tile, tile_kept, a.epoch);
    const u32 kept_before_tile = look_back(a.status, tile, tile_kept, a.epoch, lane);
    if (lane == 0) {
      kept_before_tile_shared = kept_before_tile;
      if (u32(tile) == a.tile_count - 1) *a.count_out = size_t(kept_before_tile) + tile_kept;
    }
  }
  __syncthreads();
  write_out<K>(a.out + kept_before_tile_shared, staged, tile_kept);
}

}  // namespace lab07_fast

namespace fast {

using CompactFunction = std::function<void(const float*, size_t, float*, size_t*, cudaStream_t)>;

struct Variant {
  std::string name;
  CompactFunction run;
  const void* kernel;
  int threads;
  size_t dynamic_bytes;
  bool spec;
};

template <class K>
Variant variant(const std::string& name) {
  const void* kernel = reinterpret_cast<const void*>(&lab07_fast::compact_kernel<K>);
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(K::staged_bytes)));
  CompactFunction run = [](const float* in, size_t n, float* out, size_t* count, cudaStream_t s) {
    if (n == 0) {
      CHECK(cudaMemsetAsync(count, 0, sizeof(size_t), s));
      return;
    }
    const size_t tiles = (n + K::tile_items - 1) / K::tile_items;
    DeviceScratch* scratch = scratch_for(tiles, s);
    if (scratch == nullptr) std::exit(2);
    SelectArgs a = select_args(in, n, out, K::tile_items, *scratch);
    a.tile_count = u32(tiles);
    a.count_out = count;
    lab07_fast::compact_kernel<K><<<u32(tiles), K::threads, K::staged_bytes, s>>>(a);
  };
  return {name, run, kernel, K::threads, K::staged_bytes, K::tile == tile_spec};
}

struct IsPositive {
  __host__ __device__ bool operator()(float x) const { return x > 0.f; }
};

CompactFunction cub_select() {
  struct Scratch {
    void* p = nullptr;
    size_t bytes = 0;
    ~Scratch() { cudaFree(p); }
  };
  auto s = std::make_shared<Scratch>();
  return [s](const float* in, size_t n, float* out, size_t* count, cudaStream_t stream) {
    if (n == 0) {
      CHECK(cudaMemsetAsync(count, 0, sizeof(size_t), stream));
      return;
    }
    size_t bytes = 0;
    CHECK(cub::DeviceSelect::If(nullptr, bytes, in, out, count, int64_t(n), IsPositive{}, stream));
    if (bytes > s->bytes) {
      CHECK(cudaFree(s->p));
      CHECK(cudaMalloc(&s->p, bytes));
      s->bytes = bytes;
    }
    CHECK(cub::DeviceSelect::If(s->p, bytes, in, out, count, int64_t(n), IsPositive{}, stream));
  };
}

template <int T, int R, int M, int Tile, int L, int S>
using K = Knobs<T, R, M, Tile, L, S>;

std::vector<Variant> variants() {
  auto reference_with = [](auto shape, const char* name) {
    using Shape = decltype(shape);
    return Variant{name,
                   [](const float* in, size_t n, float* out, size_t* c, cudaStream_t s) {
                     if (n == 0) return compact_positive(in, n, out, c, s);
                     compact_with<Shape>(in, n, out, c, s);
                   },
                   reinterpret_cast<const void*>(compaction_kernel<Shape>), block_threads, Shape::staged_bytes, false};
  };
  return {
      {"reference", [](const float* in, size_t n, float* out, size_t* c, cudaStream_t s) { compact_positive(in, n, out, c, s); },
       nullptr, 0, 0, false},
      reference_with(SmallCompactTiles{}, "reference, 8 loads (256x8)"),
      reference_with(LargeCompactTiles{}, "reference, 12 loads (256x12)"),
      variant<K<256, 8, 4, tile_ticket, load_cs, store_loop>>("256x8 ticket ldcs"),
      variant<K<256, 8, 4, tile_ticket, load_default, store_loopcs>>("256x8 ticket loopcs"),
      variant<K<256, 8, 4, tile_bidx, load_default, store_loop>>("256x8 bidx"),
      variant<K<256, 12, 3, tile_ticket, load_cs, store_loop>>("256x12 mb3 ticket ldcs"),
      variant<K<256, 12, 3, tile_ticket, load_default, store_loopcs>>("256x12 mb3 ticket loopcs"),
      variant<K<256, 12, 3, tile_ticket, load_default, store_vec>>("256x12 mb3 ticket vec"),
      variant<K<256, 12, 3, tile_spec, load_default, store_loop>>("256x12 mb3 spec"),
      variant<K<256, 12, 3, tile_bidx, load_default, store_loop>>("256x12 mb3 bidx"),
      variant<K<256, 10, 3, tile_ticket, load_default, store_loop>>("256x10 mb3 ticket"),
      variant<K<256, 16, 2, tile_ticket, load_default, store_loop>>("256x16 mb2 ticket"),
      variant<K<128, 12, 6, tile_ticket, load_default, store_loop>>("128x12 mb6 ticket"),
      {"cub::DeviceSelect::If", cub_select(), nullptr, 0, 0, false},
  };
}

std::vector<Variant> only_wanted(std::vector<Variant> v) {
  const char* only = std::getenv("CF_ONLY");
  if (only == nullptr) return v;
  const std::string wanted = std::string(",") + only + ",";
  std::vector<Variant> kept;
  for (Variant& x : v)
    if (wanted.find("," + x.name + ",") != std::string::npos || x.name.rfind("cub", 0) == 0) kept.push_back(x);
  return kept;
}

// ---- inputs ----------------------------------------------------------------------------------

enum class Dist { signs, all_positive, none_positive, special, sparse };
const char* dist_name(Dist d) {
  switch (d) {
    case Dist::signs: return "signs";
    case Dist::all_positive: return "all-positive";
    case Dist::none_positive: return "none-positive";
    case Dist::special: return "special";
    case Dist::sparse: return "sparse-1%";
  }
  return "?";
}

struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

uint32_t float_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

std::vector<uint32_t> make_input(size_t n, Dist d, uint64_t seed) {
  static const uint32_t edges[] = {0x00000000u, 0x80000000u, 0x7fc00001u, 0xffc12345u, 0x7f800001u, 0xff800000u,
                                   0x7f800000u, 0x00000001u, 0x807fffffu, 0x007fffffu, 0x3f800000u, 0xbf800000u};
  SplitMix rng{seed};
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng.next();
    const float u = float(r >> 40) * (1.0f / 16777216.0f);
    switch (d) {
      case Dist::signs: v[i] = float_bits(200.f * u - 100.f); break;
      case Dist::all_positive: v[i] = float_bits(1e-3f + 100.f * u); break;
      case Dist::none_positive: v[i] = (r & 7) == 0 ? 0x80000000u * uint32_t(r >> 63) : float_bits(-1e-3f - 100.f * u); break;
      case Dist::special: v[i] = (r & 3) == 0 ? edges[(r >> 8) % 12] : uint32_t(r >> 32); break;
      case Dist::sparse: v[i] = float_bits((r & 127) == 0 ? 1.f + u : -u); break;
    }
  }
  return v;
}

bool positive_bits(uint32_t b) { return b != 0 && b <= 0x7f800000u; }

template <typename T>
struct Buffer {
  T* p = nullptr;
  size_t count = 0;
  explicit Buffer(size_t c) : count(c) { CHECK(cudaMalloc(&p, std::max<size_t>(c, 1) * sizeof(T))); }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

constexpr uint32_t guard_word = 0xA5A5A5A5u;
constexpr size_t guard_words = 1024;

__global__ void compare_kernel(const uint32_t* out, const uint32_t* expected, size_t upto, size_t end,
                               unsigned long long* counts) {
  unsigned long long wrong = 0, touched = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < end; i += size_t(gridDim.x) * blockDim.x) {
    if (i < upto)
      wrong += out[i] != expected[i];
    else
      touched += out[i] != guard_word;
  }
  if (wrong) atomicAdd(&counts[0], wrong);
  if (touched) atomicAdd(&counts[1], touched);
}

void compare(const void* out, const uint32_t* expected, size_t upto, size_t end, Buffer<unsigned long long>& c,
             unsigned long long& wrong, unsigned long long& touched) {
  CHECK(cudaMemset(c.p, 0, 2 * sizeof(unsigned long long)));
  compare_kernel<<<528, 256>>>(static_cast<const uint32_t*>(out), expected, upto, end, c.p);
  unsigned long long h[2];
  CHECK(cudaMemcpy(h, c.p, sizeof h, cudaMemcpyDeviceToHost));
  wrong = h[0], touched = h[1];
}

void check_correctness(const std::vector<Variant>& vs) {
  std::vector<int> failures(vs.size());
  Buffer<unsigned long long> counts(2);
  const size_t sizes[] = {0, 1, 3, 4, 5, 127, 1000, 3071, 3072, 3073, 4095, 4096, 4097, 6143, 6144, 6145, 8191, 8192,
                          8193, 12287, 12288, 12289, 16383, 16384, 16385, 24577, 36865, 100003, 1000007,
                          size_t(1) << 24, (size_t(1) << 24) + 5, size_t(1) << 28, (size_t(1) << 28) + 3};
  int cases = 0;
  for (size_t n : sizes)
    for (Dist d : {Dist::signs, Dist::all_positive, Dist::none_positive, Dist::special, Dist::sparse}) {
      if (n > 1000007 && !(d == Dist::signs || (d == Dist::special && n % 2 == 1))) continue;
      ++cases;
      const std::vector<uint32_t> input = make_input(n, d, n * 7919 + uint64_t(d));
      std::vector<uint32_t> expected;
      expected.reserve(n);
      for (uint32_t b : input)
        if (positive_bits(b)) expected.push_back(b);
      const size_t kept = expected.size();
      Buffer<uint32_t> d_input(n), d_pristine(n), d_expected(std::max<size_t>(kept, 1)), d_out(n + guard_words);
      Buffer<size_t> d_count(1);
      CHECK(cudaMemcpy(d_input.p, input.data(), n * 4, cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(d_pristine.p, input.data(), n * 4, cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(d_expected.p, expected.data(), kept * 4, cudaMemcpyHostToDevice));
      std::string line;
      for (size_t v = 0; v < vs.size(); ++v) {
        std::string bad;
        for (int repeat = 0; repeat < 2 && bad.empty(); ++repeat) {
          CHECK(cudaMemset(d_out.p, 0xA5, (n + guard_words) * 4));
          CHECK(cudaMemset(d_count.p, 0x5A, sizeof(size_t)));
          vs[v].run(reinterpret_cast<const float*>(d_input.p), n, reinterpret_cast<float*>(d_out.p), d_count.p, 0);
          CHECK(cudaGetLastError());
          CHECK(cudaDeviceSynchronize());
          size_t count = 0;
          CHECK(cudaMemcpy(&count, d_count.p, sizeof count, cudaMemcpyDeviceToHost));
          unsigned long long wrong = 0, touched = 0, changed = 0, unused = 0;
          compare(d_out.p, d_expected.p, kept, n + guard_words, counts, wrong, touched);
          compare(d_input.p, d_pristine.p, n, n, counts, changed, unused);
          if (count != kept) bad += " COUNT(" + std::to_string(count) + ")";
          if (wrong) bad += " WRONG(" + std::to_string(wrong) + ")";
          if (touched) bad += " PAST-COUNT(" + std::to_string(touched) + ")";
          if (changed) bad += " INPUT";
        }
        if (!bad.empty()) {
          ++failures[v];
          line += "  " + vs[v].name + bad;
        }
      }
      std::printf("check n=%-10zu %-13s kept %-10zu %s\n", n, dist_name(d), kept, line.empty() ? "all right" : line.c_str());
      std::fflush(stdout);
    }
  for (size_t v = 0; v < vs.size(); ++v)
    std::printf("correctness %-32s %d of %d cases failed\n", vs[v].name.c_str(), failures[v], cases);
}

double median(std::vector<float> x) {
  std::sort(x.begin(), x.end());
  return x.size() % 2 ? x[x.size() / 2] : 0.5 * (x[x.size() / 2 - 1] + x[x.size() / 2]);
}

void time_size(const char* label, size_t n, int rounds, const std::vector<Variant>& vs) {
  const std::vector<uint32_t> input = make_input(n, Dist::signs, 42);
  size_t kept = 0;
  for (uint32_t b : input) kept += positive_bits(b);
  Buffer<uint32_t> d_input(n), d_out(n);
  Buffer<size_t> d_count(1);
  Buffer<uint8_t> flush(size_t(256) << 20);
  CHECK(cudaMemcpy(d_input.p, input.data(), n * 4, cudaMemcpyHostToDevice));
  const float* in = reinterpret_cast<const float*>(d_input.p);
  float* out = reinterpret_cast<float*>(d_out.p);
  std::vector<std::vector<float>> ms(vs.size());
  std::vector<unsigned> mismatches(vs.size());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const unsigned zero = 0;
  for (int round = 0; round < rounds + 1; ++round)  // round 0 warms up
    for (size_t v = 0; v < vs.size(); ++v) {
      CHECK(cudaMemsetAsync(flush.p, round & 0xff, flush.count, 0));
      CHECK(cudaMemcpyToSymbol(ticket_mismatches, &zero, sizeof zero));
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaEventRecord(start, 0));
      vs[v].run(in, n, out, d_count.p, 0);
      CHECK(cudaEventRecord(stop, 0));
      CHECK(cudaEventSynchronize(stop));
      CHECK(cudaGetLastError());
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, start, stop));
      unsigned m = 0;
      CHECK(cudaMemcpyFromSymbol(&m, ticket_mismatches, sizeof m));
      if (round > 0) ms[v].push_back(t), mismatches[v] += m;
    }
  double cub_ms = 0;
  for (size_t v = 0; v < vs.size(); ++v)
    if (vs[v].name.rfind("cub", 0) == 0) cub_ms = median(ms[v]);
  const double bytes = 4.0 * n + 4.0 * kept;
  for (size_t v = 0; v < vs.size(); ++v) {
    const double t = median(ms[v]);
    std::printf("compact %-6s %-30s %8.4f ms %7.1f GB/s %6.1f%% of CUB  (min %.4f, max %.4f)", label, vs[v].name.c_str(), t,
                bytes / (t * 1e-3) / 1e9, 100 * cub_ms / t, *std::min_element(ms[v].begin(), ms[v].end()),
                *std::max_element(ms[v].begin(), ms[v].end()));
    if (vs[v].spec) std::printf("  %.1f reloads per call", double(mismatches[v]) / rounds);
    std::printf("\n");
  }
  std::fflush(stdout);
}

void print_kernel_facts(const std::vector<Variant>& vs) {
  for (const Variant& v : vs) {
    if (v.kernel == nullptr) continue;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, v.kernel));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, v.kernel, v.threads, v.dynamic_bytes));
    std::printf("kernel %-30s %3d registers, %3zu B local, %6zu B shared, %d blocks (%2d warps) per SM\n", v.name.c_str(),
                a.numRegs, a.localSizeBytes, a.sharedSizeBytes + v.dynamic_bytes, blocks, blocks * v.threads / 32);
  }
}

}  // namespace fast

int main(int argc, char** argv) {
  using namespace fast;
  const std::string mode = argc > 1 ? argv[1] : "time";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 21;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, %zu MiB L2\n", prop.name, prop.multiProcessorCount, size_t(prop.l2CacheSize) >> 20);
  const std::vector<Variant> vs = only_wanted(variants());
  if (mode == "check") {
    print_kernel_facts(vs);
    check_correctness(vs);
    return 0;
  }
  time_size("2^24", size_t(1) << 24, rounds, vs);
  time_size("2^28", size_t(1) << 28, rounds, vs);
  return 0;
}
