#!/usr/bin/env bash
# On a machine of four GPUs: does the driver, which every GPU's processes share, slow a timed
# call on GPU 0 when the other GPUs start contexts or map memory? Grades one submission's lab
# on GPU 0 (16 cores of its own) three times: on an idle machine, then with
# grading/tools/driver-load.cu making contexts on GPUs 1-3, then mapping memory there, and
# prints each timed case's line. The default, lab 03 of the generated class's student-003
# (make-class.py, seed 1), is a chapter version that allocates its scratch in every call.
#   bash grading/tools/driver-contention.sh [LAB] [STUDENT]
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
lab="${1:-03}"
student="${2:-student-003}"
build="${BUILD:-/tmp/labkit-driver-contention}"
STEP_SECONDS=5 LABS="$lab" BUILD="$build" bash "$root/grading/tools/gpu-run.sh" true || exit
grader="$build/harness/grade/labkit-grade"
nvcc -O2 -o "$build/driver-load" "$root/grading/tools/driver-load.cu" || exit
python3 "$root/grading/tools/make-class.py" "$grader" /tmp/labkit-class --students 3 --seed 1 >/dev/null || exit
submissions=$(mktemp -d)
cp -r "/tmp/labkit-class/$student" "$submissions/"

grade_on_gpu0() {  # NAME
  echo "=== $1"
  CUDA_VISIBLE_DEVICES=0 timeout 120 taskset -c 0-15 "$grader" lab "$lab" --submissions "$submissions" --fresh \
    --out "/tmp/driver-contention-$1" >"/tmp/driver-contention-$1.log" 2>&1
  find "$build/grade/batch" -path "*driver-contention-$1-*" -name run.log -exec grep -h " yours " {} + | cut -c1-200
}

grade_on_gpu0 idle
for load in contexts alloc; do
  loads=()
  for gpu in 1 2 3; do
    CUDA_VISIBLE_DEVICES=$gpu taskset -c $((16 * gpu))-$((16 * gpu + 15)) "$build/driver-load" "$load" 200 &
    loads+=($!)
  done
  sleep 1
  grade_on_gpu0 "$load"
  kill "${loads[@]}" 2>/dev/null
  wait
done
