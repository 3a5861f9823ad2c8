#!/usr/bin/env bash
# grading/tools/pass-timeline.py on a made-up pass of known shape: alice's lab 01 checks from
# 0 to 10 s, waits 2 s and times from 12 to 15 s; bob's lab 02 checks from 2 to 14 s; carol's
# lab 13 did not run here. So 12 s of checks alone, 2 s of both, 1 s of timing alone.
set -euo pipefail
root="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/work/alice/01-histogram" "$tmp/work/bob/02-dot-product" "$tmp/work/carol/13-allreduce"
cat >"$tmp/pass.log" <<'LOG'
[1/3     0 s] carol/13 build: compiled (1.0 s)
[2/3    14 s] bob/02 run on GPU 0: graded, 100 / 100 points (12.0 s)
[3/3    15 s] alice/01 run on GPU 0: graded, 60 / 100 points (15.0 s)
[3/3    15 s] carol/13 run on all GPUs: not run, not judged here (100 points) (0.2 s)
LOG
printf '[   0.02 s] runner ready\n[  12.00 s] the GPU alone, for timing, after 2.00 s waiting\n[  15.00 s] done\n' \
  >"$tmp/work/alice/01-histogram/run.log"
printf '[   0.02 s] runner ready\n[  12.00 s] done\n' >"$tmp/work/bob/02-dot-product/run.log"
printf 'SKIPPED: needs 2 GPUs\n' >"$tmp/work/carol/13-allreduce/run.log"

got="$(python3 "$root/grading/tools/pass-timeline.py" "$tmp/pass.log" "$tmp/work")"
echo "$got"
expect() {
  grep -qF -- "$1" <<<"$got" || { echo "FAIL: no line with: $1"; exit 1; }
}
expect "GPU 0: 2 runs over 15 s"
expect "runs checking, none timing: 12.0 s (1.6 runs at once on average)"
expect "one run timing alone: 1.0 s; both at the hand-over: 2.0 s; neither: 0.0 s"
expect "the GPU alone, for timing: 3.0 s in all: lab 01 3.0 s (1 run)"
expect "checks: 22.0 run-seconds in all: lab 02 12.0 s (1 run), lab 01 10.0 s (1 run)"
if grep -q "all GPUs" <<<"$got"; then echo "FAIL: a lab that did not run was counted"; exit 1; fi
echo "pass-timeline: ok"
