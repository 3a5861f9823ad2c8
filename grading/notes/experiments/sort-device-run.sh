#!/usr/bin/env bash
# Issue 22, lab 09: one device call. Checks every sort variant (while the labs' targets build
# through grading/gpu-run.sh, when commands are given), times them with nothing else running,
# profiles with ncu what the variables below ask for, then runs the given commands through
# gpu-run.sh.
#   [ROUNDS=15] [NCU_VARIANTS="name,name"] [NCU_SASS=name] [LABS="01 03 09"] [OTHER_NCU=1] \
#     bash grading/notes/experiments/sort-device-run.sh "command" ...
# NCU_VARIANTS: ncu --set full of those variants' kernels and CUB's, one sort of 2^26 keys each.
# NCU_SASS: per-instruction counts (SASS) of that variant's second pass and CUB's.
# OTHER_NCU: after the commands, ncu of lab 01's reference and read-only kernels (uniform
# 100 MiB) and of lab 03's reference kernel (n = 10^7, k = 10), from their benchmarks.
# ncu runs at the GPU's own clocks (--clock-control none), so durations compare with events.
# sort_variants.bin is built beforehand with the nvcc line in sort_variants.cu's header and
# carried along; it is built here only when missing.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
exp="$root/grading/notes/experiments"
out="${OUT:-/tmp/out}"
labs="${LABS:-09}"
mkdir -p "$out" /tmp/exp
cd "$root"
bin="$exp/sort_variants.bin"
[[ -x "$bin" ]] || nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -Ilabs/09-radix-sort "$exp/sort_variants.cu" -o /tmp/exp/sv
[[ -x "$bin" ]] || bin=/tmp/exp/sv
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
ncu_run() { timeout 70 "$ncu" --clock-control none "$@"; }
builder=
if [[ $# -gt 0 ]]; then
  (LABS="$labs" BENCH=1 OUT=/tmp/exp/build bash grading/gpu-run.sh >/tmp/exp/labs-build.log 2>&1) &
  builder=$!
fi
"$bin" check 2>&1 | tee "$out/sort_check.log" | grep -v "all right"
[[ -n "$builder" ]] && wait $builder && tail -3 /tmp/exp/labs-build.log
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader -lms 250 >/tmp/exp/clocks.csv 2>&1 &
smi=$!
"$bin" time "${ROUNDS:-15}" 2>&1 | tee "$out/sort_time.log"
kill $smi
echo "SM clocks seen (MHz, count):"; cut -d, -f1 /tmp/exp/clocks.csv | sort | uniq -c | sort -k2 -n | tail -4

if [[ -n "${NCU_VARIANTS:-}" ]]; then
  kernels="regex:onesweep_pass_kernel|OnesweepKernel|digit_histograms|HistogramKernel"
  SV_ONLY="$NCU_VARIANTS" ncu_run --set full -k "$kernels" -o /tmp/exp/sort_profile "$bin" once \
    >"$out/sort_ncu_run.log" 2>&1
  tail -2 "$out/sort_ncu_run.log"
  "$ncu" --import /tmp/exp/sort_profile.ncu-rep --page details >"$out/sort_ncu_details.txt" 2>&1
  "$ncu" --import /tmp/exp/sort_profile.ncu-rep --page raw --csv >"$out/sort_ncu_raw.csv" 2>&1
  grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued" \
    "$out/sort_ncu_details.txt" | grep -v "^  Section" | cut -c1-110 | head -60
fi

if [[ -n "${NCU_SASS:-}" ]]; then
  for who in ours cub; do
    kernel=$([[ $who == ours ]] && echo onesweep_pass_kernel || echo OnesweepKernel)
    SV_ONLY="$NCU_SASS" ncu_run --section SourceCounters --section WarpStateStats --section InstructionStats \
      -k "regex:$kernel" --launch-skip 1 --launch-count 1 -o "/tmp/exp/sass_$who" "$bin" once >"$out/sass_${who}_run.log" 2>&1
    "$ncu" --import "/tmp/exp/sass_$who.ncu-rep" --page source --print-source sass --csv >"$out/sass_$who.csv" 2>&1
    wc -l "$out/sass_$who.csv"
  done
fi

[[ $# -gt 0 ]] && LABS="$labs" BENCH=1 TAIL="${TAIL:-40}" bash grading/gpu-run.sh "$@"

if [[ -n "${OTHER_NCU:-}" ]]; then
  sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
    --section WarpStateStats --section SchedulerStats)
  ncu_run "${sections[@]}" -k regex:histogram_lane_privatized_kernel --launch-count 1 \
    build-gpu/labs/lab-01-histogram-bench >"$out/lab01_ncu_reference.txt" 2>&1
  ncu_run "${sections[@]}" -k regex:read_only_kernel --launch-count 1 \
    build-gpu/labs/lab-01-histogram-bench >"$out/lab01_ncu_read_only.txt" 2>&1
  ncu_run "${sections[@]}" -k regex:radix_select_kernel --launch-count 1 \
    build-gpu/labs/lab-03-top-k-bench >"$out/lab03_ncu_reference.txt" 2>&1
  for f in lab01_ncu_reference lab01_ncu_read_only lab03_ncu_reference; do
    echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Grid Size|Block Size|Elapsed Cycles" \
      "$out/$f.txt" | head -9
  done
fi
rm -f "$out/ninja.log"
# The device tool brings back at most 8 files: one archive of them all.
(cd "$out" && tar czf /tmp/exp/out.tgz --exclude='*.ncu-rep' . && find . -mindepth 1 -delete && mv /tmp/exp/out.tgz .)
