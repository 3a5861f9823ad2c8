// Lab 07 benchmark: the reference solution beside cub::DeviceSelect::If and
// cub::DevicePartition::If (the library anchors) and the chapter's float pipeline, with GB/s
// (compaction: 4 bytes read per element plus 4 written per kept one; split: 4 read and 4
// written per element; expansion: 4 read and 4 written per element plus 4 read per kept one)
// and % of the device's measured read bandwidth, at the sizes and inputs of
// datasets/07-compact.yaml's performance and benchmark cases. No library expands: part 2's
// anchor is a device-to-device copy of the input, which moves 8 of its 8 + 4·count/n bytes
// per element. Not a test: it prints numbers for people to read.
//
// The chapter's pipeline indexes with float prefix sums, exact only up to 2^24: past that its
// indices round by a few elements either way, so at 2^28 it writes a little past n and its
// output is wrong. It writes into a buffer of its own with a guard region past n (room to
// fail safely, instead of an illegal address that would end the benchmark), and its rows are
// marked WRONG OUTPUT where the first n elements differ.
#include "compact.h"
#include "cub_compact.cuh"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

namespace {

using labkit::DeviceBuffer;

// ---- the chapter's pipeline, as in the starter: float flags, float global scan ---------

constexpr int chapter_block_dim = 1024;
constexpr int chapter_block_items = 2 * chapter_block_dim;

__global__ void chapter_predicate_kernel(const float* in, size_t n, float* flags) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = in[i] > 0.f ? 1.f : 0.f;
}

__global__ void chapter_scan_block_kernel(const float* in, size_t n, float* out, float* block_sums) {
  __shared__ float s[chapter_block_items];
  const int tid = threadIdx.x;
  const size_t base = size_t(blockIdx.x) * chapter_block_items;
  const size_t first = base + tid, second = base + tid + chapter_block_dim;
  s[tid] = first < n ? in[first] : 0.f;
  s[tid + chapter_block_dim] = second < n ? in[second] : 0.f;
  int offset = 1;
  for (; offset < chapter_block_items; offset <<= 1) {
    __syncthreads();
    const int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
    if (b < chapter_block_items) s[b] += s[a];
  }
  for (offset >>= 1; offset > 0; offset >>= 1) {
    __syncthreads();
    const int a = offset * (2 * tid + 2) - 1, b = offset * (2 * tid + 3) - 1;
    if (b < chapter_block_items) s[b] += s[a];
  }
  __syncthreads();
  if (first < n) out[first] = s[tid];
  if (second < n) out[second] = s[tid + chapter_block_dim];
  if (block_sums != nullptr && tid == 0) block_sums[blockIdx.x] = s[chapter_block_items - 1];
}

__global__ void chapter_add_block_offsets_kernel(float* out, size_t n, const float* scanned_block_sums) {
  const size_t block = size_t(blockIdx.x) + 1;
  const float offset = scanned_block_sums[block - 1];
  const size_t end = min(n, (block + 1) * chapter_block_items);
  for (size_t i = block * chapter_block_items + threadIdx.x; i < end; i += chapter_block_dim) out[i] += offset;
}

size_t chapter_blocks(size_t n) { return (n + chapter_block_items - 1) / chapter_block_items; }

void chapter_global_scan(float* data, size_t n, float* scratch, cudaStream_t stream) {
  const size_t blocks = chapter_blocks(n);
  chapter_scan_block_kernel<<<unsigned(blocks), chapter_block_dim, 0, stream>>>(data, n, data,
                                                                                blocks > 1 ? scratch : nullptr);
  if (blocks == 1) return;
  chapter_global_scan(scratch, blocks, scratch + blocks, stream);
  chapter_add_block_offsets_kernel<<<unsigned(blocks - 1), chapter_block_dim, 0, stream>>>(data, n, scratch);
}

size_t chapter_scratch_floats(size_t n) {
  size_t floats = n;
  for (size_t level = chapter_blocks(n); level > 1; level = chapter_blocks(level)) floats += level;
  return floats + 1;
}

__global__ void chapter_compact_kernel(const float* in, size_t n, const float* scan, float* out, size_t* count) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (in[i] > 0.f) out[size_t(scan[i]) - 1] = in[i];
  if (i == n - 1) *count = size_t(scan[i]);
}

__global__ void chapter_split_kernel(const float* in, size_t n, const float* scan, float* out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float total = scan[n - 1];
  if (in[i] > 0.f)
    out[size_t(scan[i]) - 1] = in[i];
  else
    out[size_t(total + (float(i) - scan[i]))] = in[i];
}

// The chapter's split (part 2): the pack's address read instead of written; the others keep
// the zero that a memset left.
__global__ void chapter_expand_kernel(const float* in, size_t n, const float* scan, const float* packed, float* out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (in[i] > 0.f) out[i] = packed[size_t(scan[i]) - 1];
}

unsigned grid_256(size_t n) { return unsigned((n + 255) / 256); }

// Elements past n that the chapter's pipeline may write into. Its float scan is exact to 2^24;
// past that each of its three levels rounds to the float spacing (16 at 2^28), so its indices
// are off by tens of elements. n/64 plus 64 Ki is far more than that.
size_t chapter_guard_elements(size_t n) { return n / 64 + (size_t(1) << 16); }

void chapter_pipeline(const float* in, size_t n, float* out, size_t* count, float* scratch, cudaStream_t stream) {
  chapter_predicate_kernel<<<grid_256(n), 256, 0, stream>>>(in, n, scratch);
  chapter_global_scan(scratch, n, scratch + n, stream);
  if (count != nullptr)
    chapter_compact_kernel<<<grid_256(n), 256, 0, stream>>>(in, n, scratch, out, count);
  else
    chapter_split_kernel<<<grid_256(n), 256, 0, stream>>>(in, n, scratch, out);
}

// Part 2 the chapter's way: predicate and scan again, clear the output, scatter back. With
// `copy_packed`, also the chapter's copy of the packed values (n of them, as the chapter copies
// its whole output buffer) into the buffer the scatter reads: `staged`.
void chapter_expand_pipeline(const float* in, const float* packed, size_t n, float* out, float* scratch,
                             float* staged, bool copy_packed, cudaStream_t stream) {
  chapter_predicate_kernel<<<grid_256(n), 256, 0, stream>>>(in, n, scratch);
  chapter_global_scan(scratch, n, scratch + n, stream);
  if (copy_packed) {
    cudaMemcpyAsync(staged, packed, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    packed = staged;
  }
  cudaMemsetAsync(out, 0, n * sizeof(float), stream);
  chapter_expand_kernel<<<grid_256(n), 256, 0, stream>>>(in, n, scratch, packed, out);
}

// ---- the table --------------------------------------------------------------------------

struct Variant {
  const char* name;
  std::function<void(const float*, size_t, float*, size_t*, cudaStream_t)> run;
  bool guarded_output = false;  // writes into the output with a guard region past n
};

using Bits = std::vector<uint32_t>;

Bits bits_of(const std::vector<float>& v) {
  Bits b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

void print_row(const char* label, const char* name, const labkit::TimingStats& t, double bytes, double peak_gbps,
               const char* note) {
  const double gbps = labkit::gigabytes_per_second(bytes, t.ms.median);
  std::printf("%-16s %-30s %10.4f ms %9.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n", label, name,
              t.ms.median, gbps, 100 * gbps / peak_gbps, t.ms.count, 100 * t.ms.relative_error, note);
}

bool is_split(const labkit::Case& c) { return c.has("exercise") && c.params.at("exercise") == "split"; }
bool is_expand(const labkit::Case& c) { return c.has("exercise") && c.params.at("exercise") == "expand"; }

// Part 2's rows: the packed values are arbitrary bits (not the input's), in a buffer with the
// chapter's guard past n, since its float addresses past 2^24 may read a little past count.
void bench_expand_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  const std::vector<float> host = labkit::generate<float>(n, c.input);
  Bits packed_bits(n + chapter_guard_elements(n));
  for (size_t j = 0; j < packed_bits.size(); ++j)
    packed_bits[j] = uint32_t(labkit::splitmix64(c.input.seed * 0x9E3779B97F4A7C15ull + j) >> 32);
  Bits expected(n, 0u);
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i)
    if (host[i] > 0.f) expected[i] = packed_bits[kept++];
  std::vector<float> packed_host(packed_bits.size());
  std::memcpy(packed_host.data(), packed_bits.data(), packed_bits.size() * sizeof(float));

  DeviceBuffer<float> input(host);
  DeviceBuffer<float> packed(packed_host);
  DeviceBuffer<float> output(n);
  DeviceBuffer<float> chapter_scratch(chapter_scratch_floats(n));
  DeviceBuffer<float> staged(n);

  using Run = std::function<void(cudaStream_t)>;
  const std::vector<std::pair<const char*, Run>> variants = {
      {"reference expand_positive",
       [&](cudaStream_t s) { expand_positive(input.data(), packed.data(), n, output.data(), s); }},
      {"cudaMemcpy of d_in (D2D)",
       [&](cudaStream_t s) {
         cudaMemcpyAsync(output.data(), input.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, s);
       }},
      {"chapter: float pipeline",
       [&](cudaStream_t s) {
         chapter_expand_pipeline(input.data(), packed.data(), n, output.data(), chapter_scratch.data(), staged.data(),
                                 false, s);
       }},
      {"chapter + its D2D copy",
       [&](cudaStream_t s) {
         chapter_expand_pipeline(input.data(), packed.data(), n, output.data(), chapter_scratch.data(), staged.data(),
                                 true, s);
       }},
  };
  const double bytes = 8.0 * double(n) + 4.0 * double(kept);
  for (const auto& [name, run] : variants) {
    const labkit::TimingStats t = labkit::time_call({run, [&](int) { output.poison(); }});
    const bool is_copy = std::strncmp(name, "cudaMemcpy", 10) == 0;
    const char* note = !is_copy && bits_of(output.download()) != expected ? "  WRONG OUTPUT" : "";
    print_row(c.name.c_str(), name, t, bytes, peak_gbps, note);
  }
}

void bench_case(const labkit::Case& c, double peak_gbps) {
  if (is_expand(c)) return bench_expand_case(c, peak_gbps);
  const size_t n = c.n;
  const bool split = is_split(c);
  const std::vector<float> host = labkit::generate<float>(n, c.input);
  const Bits in_bits = bits_of(host);
  Bits kept, others;
  for (uint32_t b : in_bits) {
    float x;
    std::memcpy(&x, &b, sizeof x);
    (x > 0.f ? kept : others).push_back(b);
  }
  Bits expected_split = kept;
  expected_split.insert(expected_split.end(), others.begin(), others.end());
  Bits partition_split = kept;  // cub::DevicePartition::If writes the rejected ones in reverse
  partition_split.insert(partition_split.end(), others.rbegin(), others.rend());

  DeviceBuffer<float> input(host);
  DeviceBuffer<float> output(n);
  DeviceBuffer<size_t> count(1);
  cub_compact::Select cub_select(n);
  cub_compact::StableSplit cub_split(n);
  DeviceBuffer<float> chapter_scratch(chapter_scratch_floats(n));
  DeviceBuffer<float> guarded_output(n + chapter_guard_elements(n));

  std::vector<Variant> variants;
  if (split) {
    variants = {
        {"reference split_positive",
         [](const float* in, size_t n, float* out, size_t*, cudaStream_t s) { split_positive(in, n, out, s); }},
        {"cub::DevicePartition::If",
         [&cub_split](const float* in, size_t n, float* out, size_t* c, cudaStream_t s) {
           cub_split.partition(in, n, out, c, s);
         }},
        {"cub Partition::If + reverse",
         [&cub_split](const float* in, size_t n, float* out, size_t*, cudaStream_t s) { cub_split(in, n, out, s); }},
        {"chapter: float pipeline",
         [&chapter_scratch](const float* in, size_t n, float* out, size_t*, cudaStream_t s) {
           chapter_pipeline(in, n, out, nullptr, chapter_scratch.data(), s);
         },
         true},
    };
  } else {
    variants = {
        {"reference compact_positive",
         [](const float* in, size_t n, float* out, size_t* c, cudaStream_t s) { compact_positive(in, n, out, c, s); }},
        {"cub::DeviceSelect::If", std::ref(cub_select)},
        {"chapter: float pipeline",
         [&chapter_scratch](const float* in, size_t n, float* out, size_t* c, cudaStream_t s) {
           chapter_pipeline(in, n, out, c, chapter_scratch.data(), s);
         },
         true},
    };
  }

  const double bytes = split ? 8.0 * double(n) : 4.0 * double(n) + 4.0 * double(kept.size());
  for (const Variant& v : variants) {
    DeviceBuffer<float>& out = v.guarded_output ? guarded_output : output;
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(input.data(), n, out.data(), count.data(), stream); },
         [&](int) {
           out.poison();
           count.poison();
         }});
    Bits actual = bits_of(out.download());
    actual.resize(n);  // the guard region is not output
    const char* note = "";
    if (split) {
      if (actual == partition_split && actual != expected_split)
        note = "  (others reversed: not a stable split)";
      else if (actual != expected_split)
        note = "  WRONG OUTPUT";
    } else {
      actual.resize(kept.size());
      if (count.download()[0] != kept.size() || actual != kept) note = "  WRONG OUTPUT";
    }
    print_row(c.name.c_str(), v.name, t, bytes, peak_gbps, note);
  }
}

// The compactions, then the splits, then the expansions, each smallest first.
std::vector<labkit::Case> in_table_order(std::vector<labkit::Case> cases) {
  const auto part = [](const labkit::Case& c) { return is_expand(c) ? 2 : is_split(c) ? 1 : 0; };
  std::stable_sort(cases.begin(), cases.end(),
                   [&part](const labkit::Case& a, const labkit::Case& b) {
                     return part(a) != part(b) ? part(a) < part(b) : a.n < b.n;
                   });
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = in_table_order(labkit::benchmark_cases(argc, argv));
  const double peak = labkit::start_benchmark(
      " (GB/s below: compaction counts 4 bytes read per element and 4 written per kept one; split 8 per element; "
      "expansion 8 per element and 4 read per kept one)");
  for (const labkit::Case& c : cases) bench_case(c, peak);
  return 0;
}
