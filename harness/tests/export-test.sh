#!/usr/bin/env bash
# `grade export` writes a case's arrays as .npy files: all of them on a GPU (exit 0), and on a
# machine without one what the checks draw on the CPU (exit 3, "could not run here"), which for
# lab 01 is the input and the expected bins.
#   export-test.sh BUILD/harness/grade/labkit-grade
set -uo pipefail
grade="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

output="$("$grade" export 01 uniform-257 --out "$scratch" 2>&1)"
status=$?
echo "$output"
if [[ $status -ne 0 && $status -ne 3 ]]; then
  echo "FAIL: exit $status, expected 0 (a GPU here) or 3 (none)"
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
