#!/usr/bin/env bash
# `grade similarity` over a tiny class of lab 01: alice hands in the reference, bob the same
# kernel with other names and without its comments, carol the chapter's version, her own. The
# pair alice-bob must come first in the CSV and the HTML, with their passage side by side, and
# what all three kept of the starter must not count. Without sim_c++ the command exits 3 and
# says how to install it; then the rest skips (77).
#   harness/tests/similarity-test.sh GRADE SOURCE_ROOT
set -uo pipefail
grade="$1"
root="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

class="$work/class"
mkdir -p "$class"/{alice,bob,carol}
cp "$root/solutions/01-histogram/histogram.cu" "$class/alice/"
sed -e 's/bins/counts/g; s/block/tile/g; s|//.*$||' "$root/solutions/01-histogram/histogram.cu" \
  >"$class/bob/histogram.cu"
cp "$root/grading/policy/chapter/01-histogram/histogram.cu" "$class/carol/"

PATH=/nonexistent "$grade" similarity --submissions "$class" --lab 01 --out "$work/out" >"$work/missing.txt" 2>&1
status=$?
[[ $status == 3 ]] || fail "without sim_c++ on PATH: exit $status, expected 3: $(cat "$work/missing.txt")"
grep -q "apt-get install similarity-tester" "$work/missing.txt" ||
  fail "without sim_c++ the message does not say how to install it: $(cat "$work/missing.txt")"
echo "ok   without sim_c++: exit 3 and how to install it"

command -v sim_c++ >/dev/null ||
  { echo "SKIPPED: sim_c++ is not installed (Debian: apt-get install similarity-tester)"; exit 77; }

"$grade" similarity --submissions "$class" --lab 01 --out "$work/out" >"$work/run.txt" 2>&1 ||
  fail "grade similarity exited $?: $(cat "$work/run.txt")"
cat "$work/run.txt"
csv="$work/out/01-histogram.csv"
html="$work/out/01-histogram.html"
[[ -f "$csv" && -f "$html" ]] || fail "no 01-histogram.csv and .html in $work/out"
first_pair="$(sed -n 2p "$csv" | cut -d, -f3,4)"
[[ "$first_pair" == "alice,bob" ]] || fail "the first pair is '$first_pair', not alice,bob: $(cat "$csv")"
shared="$(sed -n 2p "$csv" | cut -d, -f5)"
(( shared >= 90 )) || fail "alice and bob share $shared% of alice's code, expected 90% or more: $(cat "$csv")"
# carol's file is 18% alice's for sim_c++ as it stands: the starter's host function, which
# both kept. With the starter's passages left out, she shares nothing with anyone.
! grep -q carol "$csv" || fail "carol is in a pair: the starter's lines counted? $(cat "$csv")"
grep -q 'id="pair-1">1. alice and bob' "$html" || fail "the HTML does not rank alice and bob first"
grep -q "histogram.cu:[0-9]*  </span>.*counts" "$html" || fail "the HTML does not show bob's lines beside alice's"
echo "PASSED: alice and bob ranked first, their passage side by side"
