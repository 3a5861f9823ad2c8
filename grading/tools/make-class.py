#!/usr/bin/env python3
"""Writes a synthetic class for grading at scale: one folder per student, each holding every
lab's student files, each lab drawn from the kit's own versions of it.

Usage: make-class.py GRADER OUT_DIR [--students N] [--seed S]
       make-class.py GRADER OUT_DIR --corpus

--corpus writes the red-team class instead: one folder per red-team entry (its kit files put
in), one holding every reference and one every starter; mostly entries that fail fast.

GRADER is the built grader (build/harness/grade/labkit-grade); the labs and their student
files come from its catalog (`--list --json`). For each student and lab the version is, by
weight: the reference solution, the recorded chapter version (grading/policy/chapter), the
starter, or a red-team entry that hands in that lab (grading/redteam/*/*: its own files, with
the kit files its expected.yaml names under `files:` put in). Files a version lacks stay the
starter's, as a student's untouched files would. The same seed writes the same class.
"""
import argparse
import json
import pathlib
import random
import shutil
import subprocess
import sys

import yaml

WEIGHTS = {"reference": 30, "chapter": 35, "starter": 15, "redteam": 20}


def catalog(grader):
    listing = subprocess.run([grader, "--list", "--json"], check=True, capture_output=True, text=True)
    return json.loads(listing.stdout)


def kit_folders(root):
    return {"starter": root / "labs", "reference": root / "solutions", "chapter": root / "grading/policy/chapter"}


def kit_file(root, name, kind):
    """The kit's file NAME of that kind (`starter`, `reference`, `chapter` or `step STEP`), as
    `grade --expect` finds it (harness/grade/expect.cpp's kit_folder)."""
    step = kind[len("step "):] if kind.startswith("step ") else None
    folder = root / "grading/policy/steps" if step else kit_folders(root).get(kind)
    if folder is None:
        sys.exit(f"make-class: no kit files of kind {kind!r}")
    for lab in sorted(folder.iterdir()):
        found = lab / step / name if step else lab / name
        if found.is_file():
            return found
    sys.exit(f"make-class: the kit has no {kind} file {name}")


def redteam_entry_files(root, entry):
    """An entry's files by name, the kit parts its expected.yaml names put in; None for the
    entries that hand in the kit's starters or references whole (the honest versions here)."""
    expected = entry / "expected.yaml"
    parts = (yaml.safe_load(expected.read_text()) or {}).get("files") if expected.exists() else None
    if isinstance(parts, str):
        return None
    files = {f.name: f for f in entry.iterdir() if f.is_file() and f.name != "expected.yaml"}
    for name, kind in (parts or {}).items():
        files[name] = kit_file(root, name, kind)
    return files


def versions_of(root, lab):
    """Every version of one lab: kind -> list of {file name: source path}."""
    starter = {name: root / lab["folder"] / name for name in lab["student_files"]}
    versions = {"starter": [starter], "redteam": []}
    for kind in ("reference", "chapter"):
        folder = kit_folders(root)[kind] / lab["dir"]
        found = {name: folder / name for name in lab["student_files"] if (folder / name).is_file()}
        versions[kind] = [found] if found else []
    for entry in sorted((root / "grading/redteam").glob("*/*/")):
        files = redteam_entry_files(root, entry)
        handed_in = {name: files[name] for name in lab["student_files"] if files and name in files}
        if handed_in:
            versions["redteam"].append(handed_in)
    return versions


def write_class(root, labs, out, students, seed):
    chooser = random.Random(seed)
    every_lab = [versions_of(root, lab) for lab in labs]
    if out.exists():
        shutil.rmtree(out)
    for s in range(students):
        folder = out / f"student-{s + 1:03d}"
        folder.mkdir(parents=True)
        for lab, versions in zip(labs, every_lab):
            kinds = [kind for kind in WEIGHTS if versions[kind]]
            kind = chooser.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
            chosen = {**versions["starter"][0], **chooser.choice(versions[kind])}
            for name, source in chosen.items():
                shutil.copy(source, folder / name)


def write_corpus(root, labs, out):
    if out.exists():
        shutil.rmtree(out)
    for entry in sorted((root / "grading/redteam").glob("*/*/")):
        files = redteam_entry_files(root, entry)
        if files is None:
            continue
        folder = out / f"{entry.parent.name}-{entry.name}"
        folder.mkdir(parents=True)
        for name, source in files.items():
            shutil.copy(source, folder / name)
    for kind in ("reference", "starter"):
        folder = out / f"honest-{kind}"
        folder.mkdir(parents=True)
        for lab in labs:
            for name, source in versions_of(root, lab)[kind][0].items():
                shutil.copy(source, folder / name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grader")
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", action="store_true", help="the red-team class")
    args = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent.parent
    labs = catalog(args.grader)
    if args.corpus:
        write_corpus(root, labs, args.out)
    else:
        write_class(root, labs, args.out, args.students, args.seed)
    print(f"class: {len(list(args.out.iterdir()))} students x {len(labs)} labs in {args.out}")


if __name__ == "__main__":
    main()
