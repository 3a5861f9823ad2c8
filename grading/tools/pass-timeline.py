#!/usr/bin/env python3
"""Where one batch pass's time went, per GPU: how long runs were checking (sharing the GPU),
how long one run held it alone to time, how long neither, and which labs and runs took it.

Usage: pass-timeline.py PASS_LOG WORK_DIR

PASS_LOG is the batch's console output (`grade all --submissions ... > PASS_LOG`); its lines
`[i/N  T s] STUDENT/LAB run on GPU g: ... (D s)` place each run between T - D and T.
WORK_DIR is the batch's work folder, BUILD/grade/batch/OUT-KEY (OUT the name of the --out
folder): each STUDENT/LAB-NAME/run.log there says, in seconds since the run began, when it got
the GPU shared for its checks and when it got it alone to time (`the GPU shared, for checking,
after ...`, `the GPU alone, for timing, after ...`). The reports' run logs will not do: they
keep a log's tail. Whole seconds in PASS_LOG make every figure good to about a second.
"""
import collections
import pathlib
import re
import sys

# A run that did not run here ("not run: needs 2 GPUs") took no time on any GPU.
RUN_LINE = re.compile(r"^\[\d+/\d+ +(\d+) s\] (\S+)/(\d+) run on (GPU \d+|all GPUs): (?!not run).*\(([0-9.]+) s\)$")
SHARED = re.compile(r"^\[ *([0-9.]+) s\] the GPU shared, for checking, after ([0-9.]+) s waiting")
ALONE = re.compile(r"^\[ *([0-9.]+) s\] the GPU alone, for timing, after ([0-9.]+) s waiting")


class Run:
    """One lab-submission's run, in seconds since the batch began."""

    def __init__(self, name, lab, gpu, start, end, run_log):
        self.name, self.lab, self.gpu, self.start, self.end = name, lab, gpu, start, end
        shared = next((m for m in map(SHARED.match, run_log) if m), None)
        alone = next((m for m in map(ALONE.match, run_log) if m), None)
        self.checks_from = start + (float(shared.group(1)) if shared else 0)
        if alone:
            self.timing_from = start + float(alone.group(1))
            self.checks_to = self.timing_from - float(alone.group(2))
        else:
            self.timing_from = None
            self.checks_to = end

    def checking(self, t):
        return self.checks_from <= t < self.checks_to

    def timing(self, t):
        return self.timing_from is not None and self.timing_from <= t < self.end


def run_logs(work_dir):
    """(student, lab id) -> the run's log lines."""
    return {(log.parent.parent.name, log.parent.name[:2]): log.read_text(errors="replace").splitlines()
            for log in pathlib.Path(work_dir).glob("*/*/run.log")}


def read_runs(pass_log, work_dir):
    logs = run_logs(work_dir)
    runs = []
    for line in pathlib.Path(pass_log).read_text(errors="replace").splitlines():
        m = RUN_LINE.match(line.strip())
        if m and (m.group(2), m.group(3)) in logs:
            end, duration = float(m.group(1)), float(m.group(5))
            runs.append(Run(m.group(2), m.group(3), m.group(4), end - duration, end, logs[(m.group(2), m.group(3))]))
    return runs


def by_lab(pairs):
    """'lab 01 48.8 s (16 runs), ...' from (lab, seconds), the largest first."""
    seconds, count = collections.Counter(), collections.Counter()
    for lab, s in pairs:
        seconds[lab] += s
        count[lab] += 1
    return ", ".join(f"lab {lab} {seconds[lab]:.1f} s ({count[lab]} run{'s' * (count[lab] > 1)})"
                     for lab, _ in seconds.most_common())


def describe(gpu, runs, step=0.1):
    first, last = min(r.start for r in runs), max(r.end for r in runs)
    phases = collections.Counter()
    checking_sum = 0
    for i in range(round((last - first) / step)):
        t = first + (i + 0.5) * step  # the middle of each step, never on a run's edge
        checking = sum(r.checking(t) for r in runs)
        timing = any(r.timing(t) for r in runs)
        phases[(checking > 0, timing)] += step
        checking_sum += checking * step
    checking_time = phases[(True, False)] + phases[(True, True)]
    timed = [r for r in runs if r.timing_from is not None]
    print(f"{gpu}: {len(runs)} runs over {last - first:.0f} s")
    print(f"  runs checking, none timing: {phases[(True, False)]:.1f} s "
          f"({checking_sum / checking_time if checking_time else 0:.1f} runs at once on average)")
    print(f"  one run timing alone: {phases[(False, True)]:.1f} s; both at the hand-over: "
          f"{phases[(True, True)]:.1f} s; neither: {phases[(False, False)]:.1f} s")
    print(f"  the GPU alone, for timing: {sum(r.end - r.timing_from for r in timed):.1f} s in all: "
          + by_lab((r.lab, r.end - r.timing_from) for r in timed))
    print(f"  checks: {sum(r.checks_to - r.checks_from for r in runs):.1f} run-seconds in all: "
          + by_lab((r.lab, r.checks_to - r.checks_from) for r in runs))
    longest = sorted(timed, key=lambda r: r.end - r.timing_from, reverse=True)[:5]
    if longest:
        print("  longest timing: " + ", ".join(f"{r.name}/{r.lab} {r.end - r.timing_from:.1f} s" for r in longest))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    runs = read_runs(sys.argv[1], sys.argv[2])
    if not runs:
        sys.exit("pass-timeline: no run of the pass log has a run.log in " + sys.argv[2])
    for gpu in sorted({r.gpu for r in runs}):
        describe(gpu, [r for r in runs if r.gpu == gpu])


if __name__ == "__main__":
    main()
