#!/usr/bin/env python3
"""Compares two builds of kgc in one session: a baseline revision against the working tree.

Machines here differ from day to day by ±50%, so a figure from another day proves nothing: a
change that touches a hot path is measured against its baseline built beside it and run in the
same session, alternating. This script builds REV in a git worktree with the same
CARGO_TARGET_DIR as the working tree (dependencies are compiled once), copies each side's
binaries aside (`kgc`, `kgc-bench`, the `gc_bench` example), then runs every command given on
both sides, ROUNDS times, alternating which side goes first, and prints for each line of the
harness's output whose words match on both sides the median of each number and the ratio
working tree ÷ baseline. Each run's own CPU time (user + system of the harness and what it
waited for, e.g. the `kgc serve` it spawned) is a line of its own.

    benches/compare.py --baseline 068711e --rounds 3 \\
        --run 'kgc-bench create --creates 5000' --run 'gc_bench --only background'

A command's first word names a binary of the side being run (`kgc`, `kgc-bench`, `gc_bench`);
kgc-bench finds the side's `kgc` next to itself. `--skip-build` reuses the binaries of a
previous call (in --out).
"""

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARIES = {"kgc": "release/kgc", "kgc-bench": "release/kgc-bench",
            "gc_bench": "release/examples/gc_bench"}
NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*(?:\.\d+)?")


def build(tree, target, dest):
    """Builds the release binaries of `tree` into the shared `target`, copied to `dest`.

    Cargo names a workspace crate's artifacts the same in both trees (its hash does not
    depend on where the workspace is) and judges them fresh by their sources' times, so the
    tree's sources are touched first: else the working tree, older than the baseline's
    artifacts, would link them.
    """
    env = dict(os.environ, CARGO_TARGET_DIR=target, CARGO_INCREMENTAL="0")
    for base, _, files in os.walk(os.path.join(tree, "crates")):
        for f in files:
            os.utime(os.path.join(base, f))
    for args in (["-p", "kgc", "-p", "kgc-bench"], ["-p", "kgc-gc", "--example", "gc_bench"]):
        subprocess.run(["cargo", "build", "--release", "--locked", *args], cwd=tree, env=env,
                       check=True)
    os.makedirs(dest, exist_ok=True)
    for name, path in BINARIES.items():
        shutil.copy2(os.path.join(target, path), os.path.join(dest, name))


def run(side_dir, command):
    """Runs one command of one side; returns its output lines and the CPU seconds it and the
    processes it waited for spent."""
    words = shlex.split(command)
    words[0] = os.path.join(side_dir, words[0])
    before = os.times()
    proc = subprocess.run(words, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = os.times()
    if proc.returncode:
        sys.exit(f"compare: {command!r} in {side_dir} exited {proc.returncode}:\n{proc.stdout}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system)
    return proc.stdout.splitlines(), cpu


def numbers(line):
    """The line's words without its numbers (the key), and its numbers."""
    values = [float(n.replace(",", "")) for n in NUMBER.findall(line)]
    # Columns are padded to their numbers' widths: the key ignores how much space separates words.
    return " ".join(NUMBER.sub("#", line).split()), values


def keyed(lines):
    """Each numbered line by its words and occurrence (a harness may print a line twice)."""
    seen, out = {}, {}
    for line in lines:
        key, values = numbers(line)
        if values:
            n = seen[key] = seen.get(key, 0) + 1
            out[(key, n)] = values
    return out


def table(results):
    """Median per number of each line on each side, and the ratio working tree ÷ baseline,
    for the lines every run of both sides printed."""
    runs = {side: [keyed(r) for r in rs] for side, rs in results.items()}
    rows = []
    for key in runs["base"][0]:
        per_side = []
        for side in ("base", "head"):
            values = [r.get(key) for r in runs[side]]
            if any(v is None or len(v) != len(values[0]) for v in values):
                break
            per_side.append([statistics.median(v) for v in zip(*values)])
        if len(per_side) == 2:
            base, head = per_side
            ratios = ["%.2f" % (h / b) if b else "-" for b, h in zip(base, head)]
            rows.append((key[0], base, head, ratios))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--baseline", required=True, help="the revision to compare against")
    p.add_argument("--run", action="append", required=True, help="a harness command line")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=os.path.join(ROOT, "target", "compare"))
    p.add_argument("--skip-build", action="store_true")
    a = p.parse_args()
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    base_dir, head_dir = os.path.join(a.out, "base"), os.path.join(a.out, "head")
    if not a.skip_build:
        tree = os.path.join(a.out, "baseline-tree")
        if os.path.exists(tree):
            subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=ROOT, check=True)
        subprocess.run(["git", "worktree", "add", "--detach", tree, a.baseline], cwd=ROOT,
                       check=True)
        try:
            build(tree, target, base_dir)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=ROOT, check=True)
        build(ROOT, target, head_dir)
    rev = subprocess.run(["git", "rev-parse", "--short", a.baseline], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    for command in a.run:
        results = {"base": [], "head": []}
        cpu = {"base": [], "head": []}
        for r in range(a.rounds):
            order = ("base", "head") if r % 2 == 0 else ("head", "base")
            for side in order:
                lines, seconds = run(base_dir if side == "base" else head_dir, command)
                results[side].append(lines)
                cpu[side].append(seconds)
        print(f"\n## {command}  (baseline {rev}, working tree; median of {a.rounds} rounds,"
              " alternating)\n")
        print("| line | baseline | working tree | ratio |\n|---|---|---|---|")
        for key, base, head, ratios in table(results):
            fmt = lambda v: " / ".join("%g" % x for x in v)
            print(f"| {key} | {fmt(base)} | {fmt(head)} | {' / '.join(ratios)} |")
        b, h = statistics.median(cpu["base"]), statistics.median(cpu["head"])
        print(f"| CPU of the whole run (s) | {b:.2f} | {h:.2f} | {h / b:.2f} |")


if __name__ == "__main__":
    main()
