#!/usr/bin/env python3
"""Checks a graded batch's course-platform files against its gradebook, as a platform would
read them: per lab and student, Gradescope's results.json scores the lab's points and its tests
sum to them; PrairieLearn's score is the points over the lab's maximum (gradable only where the
lab was judged); Canvas's column holds the gradebook's cell.

Usage: check-platform-files.py OUT   (the folder `grade all --submissions ... --out OUT` wrote)
Prints one line per kind of file checked and each disagreement; exits 1 on any.
"""
import csv
import json
import pathlib
import sys

TOLERANCE = 0.011  # the files round to hundredths of a point


def number(cell):
    try:
        return float(cell)
    except ValueError:
        return None  # "not judged here", "-": a lab with no points


def gradebook(out):
    with open(out / "gradebook.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    labs = [name for name in rows[0] if name.startswith("lab")] if rows else []
    return rows, labs


def check(out):
    rows, labs = gradebook(out)
    counts = {"gradescope": 0, "prairielearn": 0}
    problems = []
    for row in rows:
        who = row["student"]
        for column in labs:
            points = number(row[column])
            folder = "-".join(column[3:].split("-"))  # lab01-histogram -> 01-histogram
            gradescope = out / "gradescope" / folder / who / "results.json"
            prairie = json.loads((out / "prairielearn" / folder / who / "results.json").read_text())
            counts["prairielearn"] += 1
            if points is None:
                if gradescope.exists():
                    problems.append(f"{who} {column}: no points, yet a Gradescope results.json")
                if prairie.get("gradable", True):
                    problems.append(f"{who} {column}: no points, yet PrairieLearn gradable")
                continue
            counts["gradescope"] += 1
            results = json.loads(gradescope.read_text())
            tests = sum(t["score"] for t in results["tests"])
            if abs(results["score"] - points) > TOLERANCE or abs(tests - points) > TOLERANCE:
                problems.append(f"{who} {column}: gradebook {points}, Gradescope {results['score']}, tests sum {tests:.3f}")
            maximum = sum(t["max_points"] for t in prairie["tests"])
            if not prairie["gradable"] or abs(prairie["score"] * maximum - points) > TOLERANCE * max(1, maximum / 100):
                problems.append(f"{who} {column}: gradebook {points}, PrairieLearn {prairie['score']} of {maximum}")
    return counts, problems


def main():
    out = pathlib.Path(sys.argv[1])
    counts, problems = check(out)
    print(f"checked {counts['gradescope']} Gradescope and {counts['prairielearn']} PrairieLearn results "
          f"against {out / 'gradebook.csv'}: {len(problems)} disagreements")
    for problem in problems:
        print("  " + problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
