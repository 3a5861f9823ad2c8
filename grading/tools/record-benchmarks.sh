#!/usr/bin/env bash
# On a GPU machine: runs the benchmarks of the labs named (default: every lab with one) and
# saves what each printed as docs/benchmarks/NN-name.txt, the one home of the numbers the
# READMEs' "Reference numbers" blocks show; then `./grade docs` renders those blocks.
#   grading/tools/record-benchmarks.sh [NN ...]     BUILD=DIR: the build folder (default build/)
# A lab whose benchmark skips (no GPU, or fewer GPUs than it needs) or fails keeps its saved
# output, and the script says so.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
status=0
for dir in "$root"/labs/[0-9][0-9]-*/; do
  lab=$(basename "$dir")
  [[ $# -gt 0 && " $* " != *" ${lab%%-*} "* ]] && continue
  bench="$build/labs/lab-$lab-bench"
  [[ -x "$bench" ]] || { [[ $# -gt 0 ]] && { echo "$lab: $bench is not built"; status=1; }; continue; }
  output=$(mktemp)
  if "$bench" >"$output" 2>&1; then
    mv "$output" "$root/docs/benchmarks/$lab.txt"
    echo "$lab: saved docs/benchmarks/$lab.txt"
  else
    echo "$lab: the benchmark exited $? (kept the saved output):"
    tail -5 "$output"
    rm -f "$output"
    status=1
  fi
done
exit $status
