#!/usr/bin/env bash
# The Slurm path tested for real: starts a one-node Slurm on localhost (munged,
# slurmctld and slurmd with a generated slurm.conf, all under a temp folder, no GPU and no
# gres), grades a class (the red-team build corpus plus honest submissions: the reference
# solutions and the starters) with `grade ... --submissions CLASS --slurm`, waits for the jobs,
# grades the same class locally (--fresh, into the same folder, so the compiled modules are
# kept) and requires the same gradebook, student reports, Gradescope results and JUnit, byte
# for byte; then checks resumability (a re-run submits only what could not run; a lost result
# is submitted again without compiling). Exits 77 with the reason when Slurm is not installed
# or cannot start here.
#   harness/tests/slurm-ci-test.sh [GRADE]   GRADE: the built labkit-grade (default build/...)
#   LABS="01 02" harness/tests/slurm-ci-test.sh ...   only those labs (default: all)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
grade="${1:-$root/build/harness/grade/labkit-grade}"
export PATH="$PATH:/usr/sbin:/sbin"

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*"; exit 1; }
for tool in sbatch squeue sinfo slurmctld slurmd munged; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (Debian: apt-get install slurm-wlm munge)"
done
[[ $(id -u) == 0 ]] || skip "slurmd must start as root to run jobs (run as root, as CI does)"
[[ -x "$grade" ]] || fail "no grader at $grade"

work="$(mktemp -d /tmp/labkit-slurm-ci-XXXXXX)"
chmod 755 "$work"  # the sandboxed hosts run as nobody: the class must stay readable
pids=()
stop_cluster() {
  for pid_file in "$work"/slurmd.pid "$work"/slurmctld.pid "$work"/munge/munged.pid; do
    [[ -s "$pid_file" ]] && kill "$(cat "$pid_file")" 2>/dev/null
  done
  sleep 1
  [[ -n "${KEEP_SLURM_CI:-}" ]] || rm -rf "$work"
}
trap stop_cluster EXIT

# --- a one-node cluster: munge for authentication, then the controller and the node daemon.
mkdir -p "$work"/{munge,state,spool,log}
chmod 700 "$work/munge"
head -c 1024 /dev/urandom >"$work/munge/munge.key" && chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munge/seed" ||
  skip "munged could not start: $(tail -n 3 "$work/log/munged.log" 2>/dev/null)"
host="$(hostname -s)"
port=$((20000 + RANDOM % 20000))
cat >"$work/slurm.conf" <<EOF
ClusterName=labkit-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$work/slurm.conf"
slurmctld -f "$SLURM_CONF" -i || skip "slurmctld could not start: $(tail -n 5 "$work/log/slurmctld.log")"
slurmd -f "$SLURM_CONF" || skip "slurmd could not start: $(tail -n 5 "$work/log/slurmd.log")"
for _ in $(seq 30); do
  [[ "$(sinfo --noheader --format=%t 2>/dev/null)" == idle ]] && break
  sleep 1
done
[[ "$(sinfo --noheader --format=%t 2>/dev/null)" == idle ]] ||
  skip "the one-node cluster did not come up: $(sinfo 2>&1 | tail -n 2); $(tail -n 3 "$work/log/slurmd.log")"
echo "one-node Slurm up on $host:$port ($(sinfo --version))"

# --- the class, as grading/tools/batch-benchmark.sh assembles it (red-team build corpus + honest).
class="$work/slurm-ci-class"
mkdir -p "$class/honest-reference" "$class/honest-starter"
for entry in "$root"/grading/redteam/build/*/; do cp -r "$entry" "$class/build-$(basename "$entry")"; done
# Each lab's folder and student files, as the grader's catalog has them (`--list --json`).
lab_files="$("$grade" --list --json | python3 -c 'import json, sys
for lab in json.load(sys.stdin): print(lab["dir"], *lab["student_files"])')" || fail "the grader could not list the labs"
while read -r name files; do
  cp "$root"/solutions/"$name"/* "$class/honest-reference/"
  for file in $files; do cp "$root/labs/$name/$file" "$class/honest-starter/"; done
done <<<"$lab_files"
chmod -R a+rX "$class"
echo "class: $(ls "$class" | wc -l) submissions"

which_labs=(all)
[[ -n "${LABS:-}" ]] && which_labs=(lab $LABS)
export LABKIT_SECRET="ci-secret-$RANDOM$RANDOM"
slurm_out="$work/out-slurm"
submit() { "$grade" "${which_labs[@]}" --submissions "$class" --out "$slurm_out" --slurm --gres none --shard-size 3 "$@"; }
wait_for_jobs() {
  for _ in $(seq 1800); do
    [[ -z "$(squeue --noheader --format=%i)" ]] && return 0
    sleep 1
  done
  fail "the jobs did not finish in 30 minutes: $(squeue)"
}
outputs=(gradebook.csv junit.xml students gradescope)  # what the two paths must write alike
keep_outputs() {  # copies a batch's outputs from $1 into the folder $2
  mkdir -p "$2"
  for output in "${outputs[@]}"; do cp -r "$1/$output" "$2/"; done
}
compare() {  # the Slurm path's outputs ($1) against the local ones ($2), byte for byte
  for output in "${outputs[@]}"; do
    diff -r "$1/$output" "$2/$output" >"$work/diff.txt" ||
      fail "$output differs between --slurm and the local batch: $(head -n 40 "$work/diff.txt")"
  done
}

echo "=== submit (compile here, then a job array and a collect job)"
submit --fresh | tee "$work/submit-1.txt" || fail "the --slurm submit failed"
grep -q "submitted" "$work/submit-1.txt" || fail "nothing was submitted"
wait_for_jobs
[[ -f "$slurm_out/gradebook.csv" ]] || fail "the collect job wrote no gradebook: $(cat "$slurm_out"/slurm/logs/collect-*.log)"
ls "$slurm_out"/slurm/logs/gpus-1-*.log >/dev/null || fail "no task logs"
leaks="$(grep -rl -- "$LABKIT_SECRET" "$slurm_out" "$work/state" "$work/log" | grep -v "^$slurm_out/slurm/secret\$")"
[[ -z "$leaks" ]] || fail "the secret's value was written where it should not be: $leaks"
[[ "$(stat -c %a "$slurm_out/slurm/secret")" == 600 && "$(stat -c %a "$slurm_out/slurm")" == 700 ]] ||
  fail "the secret's file or folder is readable by others"
grep -q "^$LABKIT_SECRET\$" "$slurm_out/slurm/secret" || fail "the secret's file lacks the secret"

echo "=== the same grading locally (grade all --submissions --fresh, into the same folder)"
# --fresh grades every lab-submission again; into the same --out it keeps the modules the
# Slurm path compiled (the same compiler, arguments and files: nvcc would write the same file),
# which halves the test's time. The Slurm path's outputs are set aside to compare.
slurm_first="$work/out-slurm-first"
keep_outputs "$slurm_out" "$slurm_first"
local_out="$work/out-local"
"$grade" "${which_labs[@]}" --submissions "$class" --out "$slurm_out" --fresh >"$work/local.txt" 2>&1
local_status=$?
# 0: every lab-submission graded; 3: some could not run (no GPU here, as in CI). Anything else
# is the batch's own failure; so for `grade collect` below.
[[ $local_status == 0 || $local_status == 3 ]] ||
  fail "the local batch exited $local_status: $(tail -n 20 "$work/local.txt")"
grep -q "compiled earlier, kept" "$work/local.txt" || fail "the local batch compiled again: $(tail -n 5 "$work/local.txt")"
keep_outputs "$slurm_out" "$local_out"
compare "$slurm_first" "$local_out"

# Results that could not run (no GPU here) are never reused: a re-run submits exactly those
# again, without compiling anything; everything graded is reused.
# The Slurm batch's saved results: its folder under build/grade/batch/ is named after its --out.
work_dir="$(ls -dt "$(dirname "$grade")"/../../grade/batch/"$(basename "$slurm_out")"-* | head -n 1)"
could_not_run() { grep -l '"status":"not run"' "$work_dir"/*/*/result.json 2>/dev/null | wc -l; }
expect_resubmitted() {  # $1: the submit's output, $2: how many lab-submissions it must submit
  if [[ $2 == 0 ]]; then
    grep -q "nothing to submit" "$1" || fail "a re-run submitted again what was saved: $(cat "$1")"
  else
    grep -q "slurm: $2 lab-submission(s) submitted (0 compiled now)" "$1" ||
      fail "a re-run should submit the $2 lab-submission(s) that could not run, compiling nothing: $(cat "$1")"
    wait_for_jobs
  fi
}

echo "=== resume: a re-run submits only what could not run and writes the same gradebook"
rm -rf "$slurm_out/gradebook.csv" "$slurm_out/students" "$slurm_out/gradescope" "$slurm_out/junit.xml"
not_run=$(could_not_run)
submit | tee "$work/submit-2.txt" || fail "the second submit failed"
expect_resubmitted "$work/submit-2.txt" "$not_run"
compare "$slurm_out" "$local_out"

echo "=== resume: a lost result is submitted again, without compiling"
lost="$(ls "$work_dir"/honest-reference/*/built.json | head -n 1)"
grep -q '"status":"not run"' "$(dirname "$lost")/result.json" || not_run=$((not_run + 1))
rm "$(dirname "$lost")/result.json"
submit | tee "$work/submit-3.txt" || fail "the third submit failed"
expect_resubmitted "$work/submit-3.txt" "$not_run"
compare "$slurm_out" "$local_out"
# By hand: collect reads the saved results of the batch whose --out it writes again.
rm -rf "$slurm_out/gradebook.csv" "$slurm_out/students" "$slurm_out/gradescope" "$slurm_out/junit.xml"
"$grade" collect "$class" ${LABS:-} --out "$slurm_out" >/dev/null
collect_status=$?
[[ $collect_status == 0 || $collect_status == 3 ]] || fail "grade collect exited $collect_status"
compare "$slurm_out" "$local_out"

rm -rf "$work_dir"
echo "PASSED: the class graded through Slurm matches the local batch byte for byte"
