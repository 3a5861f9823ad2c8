#!/usr/bin/env bash
# `grade board` end to end, without a GPU: a batch's output made of the kit's recorded
# runs (grading/policy/h100/: the reference, the chapter version and the starter of labs 01
# and 09) is ranked, only the students the roster gives a handle are named, lab 09 shows CUB's
# ratio beside them, and bad input exits 2.
#   board-test.sh BUILD/harness/grade/labkit-grade SOURCE_ROOT
set -uo pipefail
grade="$1"
records="$2/grading/policy/h100"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() {
  echo "FAIL $*"
  failures=$((failures + 1))
}

# A student's report as a batch writes it (students/WHO.json): the recorded runs of a tier.
results="$scratch/class"
mkdir -p "$results/students"
student() {
  local who="$1" tier="$2"
  printf '{"who": "%s", "mode": "student files", "secret_used": true, "labs": [%s, %s]}\n' "$who" \
    "$(cat "$records/$tier/01.json")" "$(cat "$records/$tier/09.json")" >"$results/students/$who.json"
}
student "Ada Lovelace" reference
student "Bob Builder" chapter
student "Cyd Charisse" reference  # correct, but chose no handle
student "Dee Starter" starter     # not correct: not timed
student "Old Student" reference   # left from another class: not in the gradebook
printf 'student,lab01-histogram,lab09-radix-sort,total,max,secret,notes\n' >"$results/gradebook.csv"
for who in "Ada Lovelace" "Bob Builder" "Cyd Charisse" "Dee Starter"; do
  printf '%s,0,0,0,200,yes,\n' "$who" >>"$results/gradebook.csv"
done
printf 'folder,name,handle\nAda Lovelace,Ada,countess\nBob Builder,Bob,"bob, the builder"\nCyd Charisse,Cyd,\n' \
  >"$scratch/roster.csv"
printf 'Dee Starter,Dee,dee\nOld Student,Old,old\n' >>"$scratch/roster.csv"

output="$("$grade" board --results "$results" --roster "$scratch/roster.csv" 2>&1)"
status=$?
[[ $status -eq 0 ]] || fail "grade board: exit $status, expected 0: $output"
summary="lab 09 radix-sort: 3 of 4 submissions correct and timed, 2 on the board (1 without a handle left off)"
[[ "$output" == *"$summary"* ]] || fail "grade board's summary: $output"
csv="$(cat "$results/board.csv" 2>/dev/null)"
# The ratios and lab 01's library are the records' (the reference's ratio is about 1, either
# side); their order, the handles and lab 09's library are the board's.
ratio="[0-9].[0-9][0-9][0-9]"
expected=(
  "lab,rank,handle,ratio,library,library_ratio"
  "01-histogram,1,countess,$ratio,*"
  "01-histogram,2,\"bob, the builder\",0.*"
  "09-radix-sort,1,countess,$ratio,cub::DeviceRadixSort::SortKeys,0.*"
  "09-radix-sort,2,\"bob, the builder\",0.*,cub::DeviceRadixSort::SortKeys,0.*"
)
mapfile -t lines <<<"$csv"
if [[ ${#lines[@]} -ne ${#expected[@]} ]]; then
  fail "board.csv has ${#lines[@]} lines, expected ${#expected[@]}: $csv"
else
  for i in "${!expected[@]}"; do
    # shellcheck disable=SC2053  # the expected line is a pattern
    [[ "${lines[$i]}" == ${expected[$i]} ]] ||
      fail "board.csv line $((i + 1)): '${lines[$i]}', expected '${expected[$i]}'"
  done
fi
html="$(cat "$results/board.html" 2>/dev/null)"
[[ "$html" == *"countess"* && "$html" == *"cub::DeviceRadixSort::SortKeys"* ]] ||
  fail "board.html lacks an entry or the library"
for name in "Ada" "Bob Builder" "Cyd" "Dee" "Old Student"; do
  [[ "$html" != *"$name"* && "$csv" != *"$name"* ]] || fail "the board names '$name', who is not on it by a handle"
done
[[ $failures -eq 0 ]] && echo "ok   grade board: ranked, handles only, the library beside them"

# --out puts the files elsewhere; a roster without handles shows no one, and says so.
printf 'folder,name\nAda Lovelace,Ada\n' >"$scratch/no-handles.csv"
output="$("$grade" board --results "$results" --roster "$scratch/no-handles.csv" --out "$scratch/elsewhere" 2>&1)"
[[ $? -eq 0 && "$output" == *"has a handle"* && "$(wc -l <"$scratch/elsewhere/board.csv")" -eq 1 ]] ||
  fail "grade board with a roster without handles: $output"

# Bad input: exit 2, named.
expect_usage() {
  local names="$1"
  shift
  output="$("$grade" "$@" 2>&1)"
  status=$?
  if [[ $status -ne 2 || "$output" != *"$names"* ]]; then
    fail "grade $*: exit $status, expected 2 naming '$names': $output"
  else
    echo "ok   grade $*: exit 2: ${output%%$'\n'*}"
  fi
}
expect_usage "--results" board
expect_usage "--roster FILE" board --results "$results"
expect_usage "holds no gradebook.csv" board --results "$scratch" --roster "$scratch/roster.csv"
printf 'folder,handle\nann,Zed\nben,zed\n' >"$scratch/same-handle.csv"
expect_usage "the handle zed is another student's too" board --results "$results" --roster "$scratch/same-handle.csv"

[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
echo "grade board: every check passed"
