#!/usr/bin/env bash
# `grade export` writes a case's arrays as .npy files, with or without a GPU where the checks
# compute them all on the CPU, as lab 01's input and expected bins: exit 0 either way.
#   export-test.sh BUILD/harness/grade/labkit-grade
set -uo pipefail
grade="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

output="$("$grade" export 01 uniform-257 --out "$scratch" 2>&1)"
status=$?
echo "$output"
if [[ $status -ne 0 ]]; then
  echo "FAIL: exit $status, expected 0 (every array written)"
  exit 1
fi
for array in input expected_bins; do
  file="$scratch/uniform-257/$array.npy"
  if [[ "$(head -c 6 "$file" 2>/dev/null | tail -c 5)" != "NUMPY" ]]; then
    echo "FAIL: $file is missing or not a .npy file"
    exit 1
  fi
  [[ "$output" == *"wrote "* ]] || { echo "FAIL: the output does not say what was written"; exit 1; }
done
echo "grade export wrote uniform-257's input and expected bins (exit $status)"
