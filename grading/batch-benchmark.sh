#!/usr/bin/env bash
# The class-grading benchmark: a class made of the red-team corpus (build, run and
# timing entries) plus honest submissions (the reference solutions and the starters), graded
# with performance on, then graded again with --fresh. Prints the batch rate of each pass and
# the verdicts that flipped between them (grading/compare-verdicts.py).
#   [LABS="01 02"] bash grading/batch-benchmark.sh [GRADE] [PASSES]
# GRADE: the grader (default: ./grade); PASSES: "first second" (default), or one of them, to
# spread the passes over two sessions (compare the students/ folders afterwards); LABS: grade
# only these labs (default: all); GRADE_OPTIONS: more options for the grader (e.g.
# "--runs-per-gpu 3").
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
grade="${1:-$root/grade}"
class="${CLASS_DIR:-/tmp/labkit-class}"
out="${OUT:-/tmp/labkit-class-out}"
rm -rf "$class" && mkdir -p "$class" "$out"
for kind in build run timing; do
  for entry in "$root"/grading/redteam/$kind/*/; do cp -r "$entry" "$class/$kind-$(basename "$entry")"; done
done
mkdir -p "$class/honest-reference" "$class/honest-starter"
for lab in "$root"/labs/[0-9][0-9]-*/; do
  name=$(basename "$lab")
  cp "$root"/solutions/"$name"/* "$class/honest-reference/"
  for file in $(sed -n 's/^student_files: \[\(.*\)\].*/\1/p' "$lab/lab.yaml" | tr -d ' ' | tr ',' ' '); do
    cp "$lab/$file" "$class/honest-starter/"
  done
done
echo "class: $(ls "$class" | wc -l) submissions in $class"
which=(all)
[[ -n "${LABS:-}" ]] && read -ra which <<<"lab $LABS"
for pass in ${2:-first second}; do
  echo "=== $pass pass"
  # shellcheck disable=SC2086 # GRADE_OPTIONS is a list of words
  "$grade" "${which[@]}" --submissions "$class" --fresh --out "$out/$pass" ${GRADE_OPTIONS:-} >"$out/$pass.log" 2>&1
  grep -E "batch rate|lab-submissions graded" "$out/$pass.log"
done
[[ -d "$out/first/students" && -d "$out/second/students" ]] &&
  python3 "$root/grading/compare-verdicts.py" "$out/first/students" "$out/second/students"
