#!/usr/bin/env bash
# Issue 22, lab 07: one device call. Checks every compaction and split variant of
# compact_variants.cu (all sizes and distributions, bit-exact, count, guard words), then times
# them beside CUB with nothing else running (2^24 and 2^28, L2 flushed before each sample,
# median of ROUNDS), with the SM clock sampled by nvidia-smi meanwhile. Logs go to $OUT as one
# archive (the device tool brings back at most 8 files).
#   [ROUNDS=15] [CV_ONLY="name,name"] bash grading/notes/experiments/compact-device-run.sh
# compact_variants.bin is built beforehand with the nvcc line in compact_variants.cu's header
# (-o grading/notes/experiments/compact_variants.bin; *.bin is git-ignored, so carry it) and is
# built here only when missing (about 20 s).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
exp="$root/grading/notes/experiments"
out="${OUT:-/tmp/out}"
mkdir -p "$out" /tmp/exp
cd "$root"
bin="$exp/compact_variants.bin"
if [[ ! -x "$bin" ]]; then
  bin=/tmp/exp/cv
  nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -Ilabs/07-compact "$exp/compact_variants.cu" -o "$bin" 2>&1 | grep -i error
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
timeout 150 "$bin" check 2>&1 | tee "$out/compact_check.log" | grep -v "all right"
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader -lms 250 >/tmp/exp/clocks.csv 2>&1 &
smi=$!
timeout 150 "$bin" time "${ROUNDS:-15}" 2>&1 | tee "$out/compact_time.log"
kill $smi
echo "SM clocks seen (MHz, count):" | tee -a "$out/compact_time.log"
cut -d, -f1 /tmp/exp/clocks.csv | sort | uniq -c | sort -k2 -n | tail -4 | tee -a "$out/compact_time.log"
(cd "$out" && tar czf /tmp/exp/out.tgz . && find . -mindepth 1 -delete && mv /tmp/exp/out.tgz compact-run.tgz)
