#!/usr/bin/env bash
# On a GPU machine: configure and build only what grading the chosen labs needs, in a build
# folder of its own (faster than the whole kit), then run each command given as an argument
# with the built grader on PATH as `labkit-grade`, each command's output kept in a log of its
# own and its tail printed.
#   bash grading/tools/gpu-run.sh "labkit-grade lab 01 --solution" "labkit-grade all --submissions ..."
# LABS="01 02" builds those labs only (default: all); BENCH=1 builds their benchmarks too;
# BUILD=DIR the build folder (default build-gpu/); OUT=DIR the logs (default BUILD/out);
# TAIL=N lines of each log printed (default 25); STEP_SECONDS=N stops a command after N seconds
# (default: no limit), so that one slow step leaves the call's time to the ones after it.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build-gpu}"
out="${OUT:-$build/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
started=$(date +%s)
[[ -f "$build/build.ninja" ]] || meson setup "$build" "$root" >"$out/setup.log" 2>&1 || { tail -30 "$out/setup.log"; exit 4; }
targets=(harness/grade/labkit-grade)
known_targets=$(ninja -C "$build" -t targets all 2>/dev/null)
for dir in "$root"/labs/[0-9][0-9]-*/; do
  lab=$(basename "$dir")
  [[ -n "${LABS:-}" && " $LABS " != *" ${lab%%-*} "* ]] && continue
  targets+=("labs/lab-$lab-runner" "labs/lab-$lab-host" "labs/lab-$lab-solution.so")
  [[ -n "${BENCH:-}" ]] && targets+=("labs/lab-$lab-bench")
  # A lab with an MPI part (12, 13) also needs its rank program and reference rank module,
  # which exist only where Meson found MPI.
  for part in "labs/lab-$lab-mpi-rank" "labs/lab-$lab-solution-mpi.so"; do
    grep -q "^$part:" <<<"$known_targets" && targets+=("$part")
  done
done
ninja -C "$build" "${targets[@]}" >"$out/ninja.log" 2>&1 || { grep -E "error|FAILED" "$out/ninja.log" | head -30; exit 4; }
echo "build: $(( $(date +%s) - started )) s"
export PATH="$build/harness/grade:$PATH"
step=0
for command in "$@"; do
  step=$((step + 1))
  echo "=== [$step] $command"
  begun=$(date +%s)
  (cd "$root" && timeout "${STEP_SECONDS:-0}" bash -c "$command") >"$out/step$step.log" 2>&1
  echo "exit $? after $(( $(date +%s) - begun )) s"
  tail -n "${TAIL:-25}" "$out/step$step.log"
done
