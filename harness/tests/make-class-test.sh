#!/usr/bin/env bash
# grading/tools/make-class.py end to end, without a GPU: a class drawn from every kind of kit
# file the red team's entries name (starter, reference, chapter, `step NAME`) is written, each
# student's folder holding every lab's student files. Skips (77) where Python's yaml module
# is missing.
#   make-class-test.sh BUILD/harness/grade/labkit-grade SOURCE_ROOT
set -uo pipefail
grade="$1"
root="$2"
python3 -c 'import yaml' 2>/dev/null || { echo "skipped: python3 with the yaml module is needed (Debian: python3-yaml)"; exit 77; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 "$root/grading/tools/make-class.py" "$grade" "$scratch/class" --students 4 --seed 1 || exit 1
students=$(find "$scratch/class" -mindepth 1 -maxdepth 1 -type d | wc -l)
# Each student hands in every lab's student files, in one folder as a class's submissions are.
missing=$("$grade" --list --json | python3 -c '
import json, pathlib, sys
files = [f for lab in json.load(sys.stdin) for f in lab["student_files"]]
for student in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    for f in files:
        if not (student / f).is_file(): print(student.name, f)' "$scratch/class")
if [[ "$students" -ne 4 || -n "$missing" ]]; then
  echo "FAIL: $students students (expected 4); missing: ${missing:-nothing}"
  exit 1
fi
echo "ok: 4 students, each with every lab's files"
