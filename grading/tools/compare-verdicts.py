#!/usr/bin/env python3
"""Counts the verdicts that differ between two gradings of the same class.

Usage: compare-verdicts.py FIRST/students SECOND/students

A verdict is, per student, lab and case: the lab's status, whether a correctness case passed,
and which band a performance case's points fell in (none, partial, full). A flip is a verdict
that differs; the largest change in a lab's points is printed beside the count.
"""
import json
import pathlib
import sys


def band(case):
    if case["kind"] != "performance":
        return "passed" if case["passed"] else "failed"
    if case["points"] <= 0:
        return "none"
    return "full" if case["points"] >= case["max_points"] - 1e-9 else "partial"


def verdicts(folder):
    found = {}
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        report = json.loads(path.read_text())
        for lab in report["labs"]:
            key = (path.stem, lab["id"])
            # A lab not judged here has no points (null), never a 0.
            points = lab["points"]
            found[key + ("status",)] = (lab["status"], None if points is None else round(points, 1))
            for case in lab["cases"]:
                found[key + (case["name"],)] = band(case)
    return found


def main(first, second):
    a, b = verdicts(first), verdicts(second)
    only_one = a.keys() ^ b.keys()
    a = {k: v for k, v in a.items() if k in b}
    b = {k: v for k, v in b.items() if k in a}
    flips = [key for key in sorted(a) if key[2] != "status" and a[key] != b[key]]
    status_flips = [key for key in a if key[2] == "status" and a[key][0] != b.get(key, (None,))[0]]
    largest = max((abs(a[k][1] - b[k][1]) for k in a
                   if k[2] == "status" and k in b and a[k][1] is not None and b[k][1] is not None), default=0.0)
    for key in flips + status_flips:
        print("flip:", "/".join(key), a.get(key), "->", b.get(key))
    print(f"verdicts compared: {len(a)} (graded in one pass only: {len(only_one)}); "
          f"flips: {len(flips) + len(status_flips)}; largest change in a lab's points: {largest:.1f}")
    return 0 if not flips and not status_flips else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
