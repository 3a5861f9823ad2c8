#!/usr/bin/env bash
# Grades the policy's three tiers of every lab on this machine's GPU (README.md here): the
# unchanged starters, the chapters' techniques done right (chapter/) and the reference
# solutions, as one class, and keeps what the grader saved for each lab-submission, without
# its logs, as OUT/h100/<tier>/<lab>.json: copy that folder over grading/policy/h100/ and
# harness/tests/test_policy.cpp scores it under every later rubric.
#   grading/policy/record.sh OUT [LAB...]      GRADE=... the built labkit-grade
#   TIERS="chapter" grading/policy/record.sh ...  only those tiers (default: all three)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
grade="${GRADE:-$root/build/harness/grade/labkit-grade}"
out="$(realpath -m "$1")"
shift
labs=(all)
[[ $# -gt 0 ]] && labs=(lab "$@")

class="$(mktemp -d /tmp/labkit-policy-XXXXXX)/policy-class"
tiers=(${TIERS:-starter chapter reference})
for tier in "${tiers[@]}"; do mkdir -p "$class/$tier"; done
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
done <<<"$lab_files"
chmod -R a+rX "$(dirname "$class")"  # the sandboxed hosts run as nobody

"$grade" "${labs[@]}" --submissions "$class" --out "$out/batch" --fresh
status=$?
saved="$(dirname "$grade")/../../grade/batch/policy-class"
for result in "$saved"/*/*/result.json; do
  tier=$(basename "$(dirname "$(dirname "$result")")")
  lab=$(basename "$(dirname "$result")")
  mkdir -p "$out/h100/$tier"
  python3 -c '
import json, sys
lab = json.load(open(sys.argv[1]))["result"]
lab.update(build_log="", run_log="", sanitizer=[])
json.dump(lab, open(sys.argv[2], "w"), indent=1)
' "$result" "$out/h100/$tier/${lab%%-*}.json"
done
exit $status
