#!/usr/bin/env bash
# The class-grading benchmark: a synthetic class (grading/tools/make-class.py: per student and lab,
# the reference, the chapter version, the starter or a red-team entry) graded with performance
# on, once per pass, each pass --fresh into a folder of its own (so each compiles the class
# anew). Prints each pass's batch rate, where its time went on each GPU
# (grading/tools/pass-timeline.py) and, after two passes, the verdicts that flipped between
# them (grading/tools/compare-verdicts.py).
#   [STUDENTS=12|corpus] [LABS="01 02"] bash grading/tools/batch-benchmark.sh [GRADE] [PASSES]
# STUDENTS=corpus grades the red-team class instead (make-class.py --corpus): mostly entries
# that fail before timing, so its rate is far above a class of working submissions'.
# GRADE: the ./grade launcher or a built labkit-grade (default: ./grade); PASSES: pass names
# (default "first second"); a pass named like one already in $OUT is graded again. The same
# STUDENTS and SEED write the same class, so passes on other machines (or --gpus, set in
# GRADE_OPTIONS) compare: `compare-verdicts.py A/students B/students`. LABS: only these labs.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
grade="${1:-$root/grade}"
class="${CLASS_DIR:-/tmp/labkit-class}"
out="${OUT:-/tmp/labkit-class-out}"
mkdir -p "$out"
grader="$grade"
if [[ "$(basename "$grade")" == "grade" ]]; then
  "$grade" all --list-build-targets >/dev/null  # the launcher builds the grader first
  grader="${LABKIT_BUILD_DIR:-$root/build}/harness/grade/labkit-grade"
fi
class_kind=(--students "${STUDENTS:-12}" --seed "${SEED:-1}")
[[ "${STUDENTS:-}" == corpus ]] && class_kind=(--corpus)
python3 "$root/grading/tools/make-class.py" "$grader" "$class" "${class_kind[@]}" || exit 1
which=(all)
[[ -n "${LABS:-}" ]] && read -ra which <<<"lab $LABS"
passes=(${2:-first second})
for pass in "${passes[@]}"; do
  echo "=== $pass pass"
  # shellcheck disable=SC2086 # GRADE_OPTIONS is a list of words
  "$grade" "${which[@]}" --submissions "$class" --fresh --out "$out/$pass" ${GRADE_OPTIONS:-} >"$out/$pass.log" 2>&1
  grep -E "batch rate|lab-submissions graded" "$out/$pass.log"
  # The runners' logs are in the batch's work folder, named after the --out folder.
  work=$(ls -td "$(dirname "$(dirname "$(dirname "$grader")")")/grade/batch/$pass"-* 2>/dev/null | head -1)
  [[ -n "$work" ]] && python3 "$root/grading/tools/pass-timeline.py" "$out/$pass.log" "$work"
done
if (( ${#passes[@]} == 2 )); then
  python3 "$root/grading/tools/compare-verdicts.py" "$out/${passes[0]}/students" "$out/${passes[1]}/students"
fi
