# Writes a copy of the lab 03 reference with globaltimer stamps for 03-top-k-timeline.cu:
#   python3 docs/design/03-top-k-timeline.py solutions/03-top-k/topk.cu OUT.cu
# Each stamp goes where one pattern matches exactly once, so a reference whose shape has
# changed stops here instead of stamping the wrong place.
import re, sys
src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
s = s.replace('#include "topk.h"\n', '#include "topk.h"\n__device__ unsigned long long trace_stamps[1024][6];\n__device__ __forceinline__ unsigned long long now_ns() { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }\n#define STAMP(j) do { if (threadIdx.x == 0) trace_stamps[blockIdx.x][j] = now_ns(); } while (0)\n', 1)
def sub(pat, rep):
    global s
    n = len(re.findall(pat, s, flags=re.S))
    assert n == 1, (pat, n)
    s = re.sub(pat, rep, s, flags=re.S)
sub(r"(  const InputView input = split_input\(in, n\);\n  uint32_t\* count = &state->prefilter_count\[parity\];)", r"  STAMP(0);\n\1")
sub(r"(  if \(sample.wide\) park_tile\(early_second, parked \+ tile_vectors\);\n)", r"\1  STAMP(1);\n")
sub(r"(  if \(!draws\) bound = await_bound\([^;]*;\n)", r"\1  STAMP(2);\n")
sub(r"(  const Finish finish = plan_finish\([^;]*;\n)", r"  STAMP(3);\n\1  if (finish.plan != plan_pending) { __syncthreads(); STAMP(4); }\n")
sub(r"(  if \(finish.plan == plan_prefilter\)\n)", r"  if (finish.plan == plan_fine_bins) { __syncthreads(); STAMP(5); }\n\1")
open(dst, 'w').write(s)
