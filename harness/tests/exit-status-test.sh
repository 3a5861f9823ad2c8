#!/usr/bin/env bash
# `grade`'s bad input, end to end: each mistake exits 2 with a message naming what was wrong,
# never "the kit failed" (4) nor the argument library's own codes. Needs no GPU and no build of
# the labs: every case stops before anything is compiled.
#   exit-status-test.sh BUILD/harness/grade/labkit-grade
set -uo pipefail
grade="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/empty-class" "$scratch/class/alice"
printf 'student_id,name\n1001,Alice\n' >"$scratch/roster-without-folders.csv"
failures=0

# expect_usage "what it names" ARGUMENTS...
expect_usage() {
  local names="$1"
  shift
  local output status
  output="$("$grade" "$@" 2>&1)"
  status=$?
  if [[ $status -ne 2 ]]; then
    echo "FAIL grade $*: exit $status, expected 2 (bad input): $output"
    failures=$((failures + 1))
  elif [[ "$output" != *"$names"* ]]; then
    echo "FAIL grade $*: the message does not name '$names': $output"
    failures=$((failures + 1))
  elif [[ "$output" == *"the kit failed"* ]]; then
    echo "FAIL grade $*: blames the kit: $output"
    failures=$((failures + 1))
  else
    echo "ok   grade $*: exit 2: ${output%%$'\n'*}"
  fi
}

expect_usage "no lab '99'" lab 99
expect_usage "no lab 'labs/99-nothing'" lab labs/99-nothing
expect_usage "nosuchcase" export 01 nosuchcase
expect_usage "/nonexistent" all --secret-file /nonexistent
expect_usage "/nonexistent" all --submissions /nonexistent
expect_usage "$scratch/empty-class" all --submissions "$scratch/empty-class"
expect_usage "say what to grade" --submissions "$scratch/empty-class"
expect_usage "labs is required" lab
expect_usage "bogus" bogus
expect_usage "--seed" all --seed abc
expect_usage "./grade selftest" selftest
expect_usage "/nonexistent" all --submissions "$scratch/class" --roster /nonexistent
expect_usage "has no \`folder\` column" all --submissions "$scratch/class" --roster "$scratch/roster-without-folders.csv"
expect_usage "--time-limit: must be 1 or more, not -5" all --time-limit -5
expect_usage "--jobs: must be 1 or more, not -1" all --jobs -1
expect_usage "--shard-size: must be 1 or more, not 0" all --submissions "$scratch/class" --slurm --shard-size 0
expect_usage "--roster goes with --submissions" lab 01 --roster "$scratch/roster-without-folders.csv"
CUDA_VISIBLE_DEVICES=2,3 expect_usage "CUDA_VISIBLE_DEVICES=2,3 lists (2)" lab 01 --gpus 4

# With nothing to do, `grade` lists the labs and exits 0.
if output="$("$grade" 2>&1)" && [[ "$output" == *"Grade one with"* ]]; then
  echo "ok   grade: exit 0: lists the labs"
else
  echo "FAIL grade with no arguments: exit $?, expected 0 and the list of labs: $output"
  failures=$((failures + 1))
fi

# A verb's --help lists every option it takes (they are the app's), and exits 0; selftest's is
# the launcher's own, not Meson's.
for verb in lab all collect; do
  if output="$("$grade" $verb --help 2>&1)" && [[ "$output" == *"--submissions"* && "$output" == *"--roster"* ]]; then
    echo "ok   grade $verb --help: exit 0, every option"
  else
    echo "FAIL grade $verb --help: exit $?, expected 0 and every option: $output"
    failures=$((failures + 1))
  fi
done
launcher="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/grade"
if output="$("$launcher" selftest --help 2>&1)" && [[ "$output" == "usage: ./grade selftest"* ]]; then
  echo "ok   ./grade selftest --help: the launcher's usage"
else
  echo "FAIL ./grade selftest --help: exit $?, expected 0 and the launcher's usage: $output"
  failures=$((failures + 1))
fi

# A roster kept in the class folder is not graded as a student's submission.
mkdir -p "$scratch/roster-class/bob"
printf 'folder,student_id,name,email\nbob,1002,Bob,bob@example.edu\n' >"$scratch/roster-class/roster.csv"
output="$("$grade" lab 01 --submissions "$scratch/roster-class" --roster "$scratch/roster-class/roster.csv" \
  --out "$scratch/roster-out" 2>&1)"
if [[ "$output" != *"roster.csv"* && "$(wc -l <"$scratch/roster-out/gradebook.csv")" -eq 2 ]]; then
  echo "ok   grade: the roster inside the class folder is not a submission"
else
  echo "FAIL the roster inside the class folder was graded as a submission: $output"
  failures=$((failures + 1))
fi

[[ $failures -eq 0 ]] || { echo "$failures case(s) failed"; exit 1; }
echo "every bad input exits 2 and names itself"
