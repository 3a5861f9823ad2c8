#!/usr/bin/env bash
# One call's worth of GPU checks for the labs named (e.g. `01 02`): build only what those labs
# need, grade the reference solutions and then the starter code, and run each lab's
# benchmark. Logs go to $OUT (the device tool's output folder) when it is set.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD:-$root/build-gpu}"
out="${OUT:-$build/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv

[[ -f "$build/build.ninja" ]] || meson setup "$build" "$root" >"$out/setup.log" 2>&1 || { cat "$out/setup.log"; exit 4; }
targets=(harness/grade/labkit-grade)
for id in "$@"; do
  dir=$(cd "$root/labs" && ls -d "$id"-* | head -1)
  targets+=("labs/lab-$dir-runner" "labs/lab-$dir-host" "labs/lab-$dir-solution.so" "labs/lab-$dir-bench")
done
ninja -C "$build" "${targets[@]}" >"$out/ninja.log" 2>&1 || { tail -40 "$out/ninja.log"; exit 4; }

grade="$build/harness/grade/labkit-grade"
echo "=== grade lab $* --solution"; "$grade" lab "$@" --solution >"$out/solution.txt"; echo "exit $?"; cat "$out/solution.txt"
echo "=== grade lab $* (starter code)"; "$grade" lab "$@" >"$out/starter.txt"; echo "exit $?"; cat "$out/starter.txt"
for id in "$@"; do
  dir=$(cd "$root/labs" && ls -d "$id"-* | head -1)
  echo "=== benchmark $dir"; "$build/labs/lab-$dir-bench" | tee "$out/bench-$dir.txt"
done
