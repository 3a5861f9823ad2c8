#!/usr/bin/env bash
# Issue 22: one device call. Builds the experiment binaries and the labs' targets (through
# grading/gpu-run.sh) side by side, runs the experiments, then the given commands.
#   bash grading/notes/experiments/device-run.sh "LABS" "command" ...
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
exp="$root/grading/notes/experiments"
out="${OUT:-/tmp/out}"
mkdir -p "$out" /tmp/exp
cd "$root"
labs="$1"
shift
builder=
if [[ "$labs" != "-" ]]; then
  (LABS="$labs" BENCH=1 OUT=/tmp/exp/build bash grading/gpu-run.sh >/tmp/exp/labs-build.log 2>&1) &
  builder=$!
fi
nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/04-matmul -Iharness/include "$exp/sgemm_variants.cu" -lcublas \
  -o /tmp/exp/sgemm_variants >/tmp/exp/sgemm-build.log 2>&1 &
sgemm_build=$!
[[ -n "${NBODY:-}" ]] && nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/08-nbody "$exp/nbody_variants.cu" -o /tmp/exp/nbody_variants 2>&1 | grep error
wait $sgemm_build || cat /tmp/exp/sgemm-build.log
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader -lms 250 >/tmp/exp/clocks.csv 2>&1 &
smi=$!
[[ -x /tmp/exp/nbody_variants ]] && /tmp/exp/nbody_variants 2>&1 | tee "$out/nbody_variants.log"
[[ -x /tmp/exp/sgemm_variants ]] && /tmp/exp/sgemm_variants 2>&1 | tee "$out/sgemm_variants.log"
kill $smi
echo "SM clocks seen (MHz, count):"; cut -d, -f1 /tmp/exp/clocks.csv | sort | uniq -c | sort -k2 -n | tail -6
[[ -n "$builder" ]] && wait $builder && cat /tmp/exp/labs-build.log
[[ $# -gt 0 ]] && LABS="$labs" BENCH=1 TAIL="${TAIL:-40}" bash grading/gpu-run.sh "$@"
rm -f "$out/ninja.log"
