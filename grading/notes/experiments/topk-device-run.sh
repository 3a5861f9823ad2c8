#!/usr/bin/env bash
# Issue 22, lab 03: one device call. Checks the previous and the new top-k reference against the
# host (topk_variants check), times them beside a full CUB sort (topk_variants time), and with
# LAB=1 builds lab 03 through grading/gpu-run.sh meanwhile and runs its benchmark and its
# grading of the reference; NCU=1 adds ncu of both references' kernels (n = 10^7, k = 10, 1000).
#   [SAMPLES=15] [LAB=1] [NCU=1] bash grading/notes/experiments/topk-device-run.sh
# topk_variants.bin may be built beforehand with the nvcc line in topk_variants.cu's header
# and carried along; it is built here only when missing. Logs go to $OUT as one archive.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
exp="$root/grading/notes/experiments"
out="${OUT:-/tmp/out}"
mkdir -p "$out" /tmp/exp
cd "$root"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
builder=
if [[ -n "${LAB:-}" ]]; then
  (LABS=03 BENCH=1 OUT=/tmp/exp/build bash grading/gpu-run.sh >/tmp/exp/labs-build.log 2>&1) &
  builder=$!
fi
bin="$exp/topk_variants.bin"
if [[ ! -x "$bin" ]]; then
  bin=/tmp/exp/tv
  nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -Ilabs/03-top-k "$exp/topk_variants.cu" -o "$bin" \
    >"$out/topk_build.log" 2>&1 || { tail -30 "$out/topk_build.log"; exit 4; }
fi
echo "=== check"
timeout 300 "$bin" check 2>&1 | tee "$out/topk_check.log" | tail -25
[[ -n "$builder" ]] && { wait $builder; tail -3 /tmp/exp/labs-build.log; }
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader -lms 250 >/tmp/exp/clocks.csv 2>&1 &
smi=$!
echo "=== time"
timeout 300 "$bin" time "${SAMPLES:-15}" 2>&1 | tee "$out/topk_time.log"
kill $smi
echo "SM clocks seen (MHz, count):"; cut -d, -f1 /tmp/exp/clocks.csv | sort | uniq -c | sort -k2 -n | tail -4

if [[ -n "${LAB:-}" ]]; then
  LABS=03 BENCH=1 TAIL="${TAIL:-30}" OUT=/tmp/exp/lab bash grading/gpu-run.sh \
    "build-gpu/labs/lab-03-top-k-bench" "labkit-grade lab 03 --solution"
  cp /tmp/exp/lab/step1.log "$out/lab03_bench.log" 2>/dev/null
  cp /tmp/exp/lab/step2.log "$out/lab03_grade_solution.log" 2>/dev/null
fi

if [[ -n "${NCU:-}" ]]; then
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 120 "$ncu" --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
    -k "regex:sampled_select_kernel|radix_select_kernel" "$bin" once >"$out/topk_ncu.txt" 2>&1
  grep -E "select_kernel|Duration|DRAM Throughput|Achieved Occupancy|Registers Per" "$out/topk_ncu.txt" | head -30
fi
# The device tool brings back at most 8 files: one archive of them all.
(cd "$out" && tar czf /tmp/exp/out.tgz . && find . -mindepth 1 -delete && mv /tmp/exp/out.tgz .)
