#!/usr/bin/env bash
# Grades the policy's three tiers of every lab on this machine's GPU (README.md here): the
# unchanged starters, the chapters' techniques done right (chapter/) and the reference
# solutions, and the steps that versions.yaml lists (steps/NN-name/STEP/), as one class, and
# keeps what the grader gave for each lab-submission, without its logs, as
# OUT/h100/<tier>/<lab>.json and OUT/h100/steps/NN-name/STEP.json: copy OUT/h100/ over
# grading/policy/h100/ and harness/tests/test_policy.cpp scores it under every later rubric.
#   grading/policy/record.sh OUT [LAB...]        GRADE=... the built labkit-grade
#   TIERS="chapter steps" grading/policy/record.sh ...  only those (default: starter chapter
#                                                 reference steps)
# Each step is a student of its own (step-NN-STEP) holding its lab's files only: the class's
# other labs are "not handed in" for it, which the batch grades as such and this script skips.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
grade="${GRADE:-$root/build/harness/grade/labkit-grade}"
out="$(realpath -m "$1")"
shift
labs=(all)
[[ $# -gt 0 ]] && labs=(lab "$@")

class="$(mktemp -d /tmp/labkit-policy-XXXXXX)/policy-class"
tiers=(${TIERS:-starter chapter reference steps})
has_tier() { [[ " ${tiers[*]} " == *" $1 "* ]]; }
for tier in starter chapter reference; do has_tier "$tier" && mkdir -p "$class/$tier"; done
# Each lab's folder and student files, as the grader's catalog has them (`--list --json`).
lab_files="$("$grade" --list --json | python3 -c 'import json, sys
for lab in json.load(sys.stdin): print(lab["dir"], *lab["student_files"])')" || exit 4
while read -r name files; do
  lab="$root/labs/$name"
  chapter="$root/grading/policy/chapter/$name"
  for file in $files; do
    [[ -d "$class/starter" ]] && cp "$lab/$file" "$class/starter/"
    # A part whose chapter technique is all it asks has no chapter file: the reference's is it.
    if [[ -d "$class/chapter" && -d "$chapter" ]]; then
      if [[ -f "$chapter/$file" ]]; then cp "$chapter/$file" "$class/chapter/"; else cp "$root/solutions/$name/$file" "$class/chapter/"; fi
    fi
  done
  [[ -d "$class/reference" ]] && cp "$root/solutions/$name"/* "$class/reference/"
  # The steps of the labs asked for: a student per step, with that lab's files of the step.
  if has_tier steps && [[ -d "$root/grading/policy/steps/$name" ]] &&
     [[ ${labs[0]} == all || " ${labs[*]:1} " == *" ${name%%-*} "* ]]; then
    for step in "$root/grading/policy/steps/$name"/*/; do
      student="$class/step-${name%%-*}-$(basename "$step")"
      mkdir -p "$student"
      cp "$step"* "$student/"
    done
  fi
done <<<"$lab_files"
chmod -R a+rX "$(dirname "$class")"  # the sandboxed hosts run as nobody

"$grade" "${labs[@]}" --submissions "$class" --out "$out/batch" --fresh
status=$?
# What the batch gave each student (students/WHO.json: every lab of the run with its cases and
# timing records), one lab per file, without logs: every lab of a tier, a step's own lab only.
python3 - "$class" "$out/batch/students" "$out/h100" "$lab_files" <<'PY' || status=4
import json, os, sys
class_dir, students, records, lab_files = sys.argv[1:5]
lab_dir = {line.split()[0].split("-")[0]: line.split()[0] for line in lab_files.splitlines() if line.strip()}
written = 0
for who in sorted(os.listdir(class_dir)):
    report_file = os.path.join(students, who + ".json")
    if not os.path.exists(report_file):
        print(f"record.sh: no report for {who} at {report_file}", file=sys.stderr)
        continue
    for lab in json.load(open(report_file))["labs"]:
        lab.update(build_log="", run_log="", sanitizer=[])
        if who.startswith("step-"):
            lab_id, step = who[len("step-"):].split("-", 1)
            if lab["id"] != lab_id:
                continue  # the step's other labs: not handed in
            target = os.path.join(records, "steps", lab_dir[lab_id], step + ".json")
        else:
            target = os.path.join(records, who, lab["id"] + ".json")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            json.dump(lab, f, indent=1)
        written += 1
print(f"record.sh: {written} records under {records}/")
PY
exit $status
