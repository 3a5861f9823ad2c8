#!/usr/bin/env bash
# GPU checks for the labs named (e.g. `01 02`) on this machine: grade the reference solutions,
# then the starter code, then run each lab's benchmark. Builds only those labs, through
# grading/tools/gpu-run.sh (its BUILD and OUT choose the build folder and where the logs go).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
benches=()
for id in "$@"; do
  dir=$(cd "$root/labs" && ls -d "$id"-* | head -1)
  benches+=("${BUILD:-$root/build-gpu}/labs/lab-$dir-bench")
done
LABS="$*" BENCH=1 TAIL="${TAIL:-60}" bash "$root/grading/tools/gpu-run.sh" \
  "labkit-grade lab $* --solution" "labkit-grade lab $*" "${benches[@]}"
