# Writes a copy of the lab 03 reference for 03-top-k-parts.cu that can leave parts of its
# call out, by the device variable parts_mode (0: the whole reference; the others as the
# driver's table says):
#   python3 docs/design/03-top-k-parts.py solutions/03-top-k/topk.cu OUT.cu
# Mode 1 and 2 read with the bound a normal call drew on the same input (recorded by the
# drawer in mode 0). Each change goes where one pattern matches exactly once, so a reference
# whose shape has changed stops here instead of changing the wrong place.
import re, sys
src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
def sub(pat, rep):
    global s
    n = len(re.findall(pat, s, flags=re.S))
    assert n == 1, (pat, n)
    s = re.sub(pat, rep, s, count=1, flags=re.S)
s = s.replace('#include "topk.h"\n', '#include "topk.h"\n__device__ unsigned long long given_bound;\n__device__ int parts_mode;\n', 1)
sub(r"(  if \(threadIdx.x == 0\) atomicExch\(published, \(1ull << 63\) \| \(uint64_t\(fine_shift\) << 32\) \| key\);\n)",
    r"\1  if (threadIdx.x == 0 && parts_mode == 0) given_bound = (1ull << 63) | (uint64_t(fine_shift) << 32) | key;\n")
# Modes 1-7 read through this instead of prefilter_pass (a call of its own, so that the
# reference's own code keeps its registers): the bound given (1; 2 after the sample's histogram
# and arrival, as the reference makes them), the loads with nothing kept (3), or no read.
read_with_bound_given = r'''
__device__ __noinline__ Bound read_with_bound_given(const int32_t* in, size_t n, uint32_t k, SelectState* state,
                                                    unsigned parity, const Buffers& buffers, uint32_t* shared_bins) {
  const InputView input = split_input(in, n);
  uint32_t* count = &state->prefilter_count[parity];
  const Bound bound{uint32_t(given_bound), uint32_t(given_bound >> 32) & 0xFFu};
  if (parts_mode >= 4) return bound;
  if (parts_mode == 3) {  // the same loads, nothing kept
    uint32_t acc = 0;
    unsigned t = 0;
    for (; block_tile(input, t + 1) != ~0u; t += 2) {
      const Tile a = load_tile(input, block_tile(input, t));
      const Tile b = load_tile(input, block_tile(input, t + 1));
#pragma unroll
      for (int u = 0; u < vectors_per_thread; ++u) acc ^= a.vectors[u].x ^ a.vectors[u].w ^ b.vectors[u].y ^ b.vectors[u].z;
    }
    if (block_tile(input, t) != ~0u) acc ^= load_tile(input, block_tile(input, t)).vectors[0].x;
    if (acc == 0x7fffffffu) buffers.unsorted[0] = int32_t(acc);
    return bound;
  }
  const Sample sample = sample_for(k);
  const Tile first = load_tile(input, block_tile(input, 0));
  const Tile second = load_tile(input, sample.wide ? block_tile(input, 1) : ~0u);
  if (parts_mode == 2) {
    zero_histogram(shared_bins);
    __syncthreads();
    histogram_tile(first, input, shared_bins);
    histogram_tile(second, input, shared_bins);
    add_sample(k, sample.quorum, shared_bins, state->bound_histogram[parity], &state->bound_arrivals[parity]);
  }
  __shared__ uint32_t staged_count;
  extern __shared__ uint32_t finish_keys[];
  int32_t* staged_values = reinterpret_cast<int32_t*>(finish_keys) + finish_shared_bytes / sizeof(uint32_t);
  const Stage stage{&staged_count, staged_values, shared_bins, count, reinterpret_cast<int32_t*>(finish_keys)};
  zero_histogram(shared_bins);
  if (threadIdx.x == 0) staged_count = 0;
  __syncthreads();
  prefilter_tile(first, input, bound, buffers, stage);
  prefilter_tile(second, input, bound, buffers, stage);
  prefilter_tiles_from(sample.wide ? 2 : 1, input, bound, buffers, stage);
  flush_stage(stage, bound, k, buffers, state->fine_histogram[parity]);
  prefilter_loose_values(in, n, input, bound, buffers, count, state->fine_histogram[parity]);
  return bound;
}

'''
i = s.index("// Steps 1 and 2: the one read of the input.")
s = s[:i] + read_with_bound_given + s[i:]
sub(r"(  const InputView input = split_input\(in, n\);\n  uint32_t\* count = &state->prefilter_count\[parity\];\n  uint32_t\* fine_histogram)",
    r"  if (parts_mode != 0) return read_with_bound_given(in, n, k, state, parity, buffers, shared_bins);\n\1")
sub(r"(  const Bound bound =\n      prefilter_pass\()", r"  if (parts_mode == 5) return;\n\1")
sub(r"(  const Finish finish = plan_finish\([^;]*;\n)", r"\1  if (parts_mode == 6) return;\n")
sub(r"(  const cg::grid_group grid = cg::this_grid\(\);\n\n  // Nothing reads these)", r"  if (parts_mode == 7) return;\n\1")
open(dst, 'w').write(s)
