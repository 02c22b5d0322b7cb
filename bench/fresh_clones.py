"""What a new user gets from `make demo`: N fresh clones of this repository, each installed and trained from nothing.

Each clone gets its own empty virtualenv (`make venv`, timed apart: it depends on the package index), its own
training cache (KIT_TRAIN_CACHE) and KIT_HOME, so nothing of an earlier run is reused; then `make demo` runs as the
README says, timed from start to exit, and its test accuracy is read from outputs/bert_cls/metrics.json. The clones
run one after another (on 2 cores, two demos at once would time each other's load).

Target: every clone's demo succeeds and all give the same test accuracy to 4 decimals (the tokenizer and the split
are deterministic, so one machine repeats itself). Prints one line per clone, then the ranges the README quotes.

    .venv/bin/python bench/fresh_clones.py [--clones 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], cwd: Path, env: dict, log: Path) -> float:
    start = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if code != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"{' '.join(argv)} failed in {cwd} with exit {code}: {tail} (log {log})")
    return time.perf_counter() - start


def one_clone(n: int, work: Path) -> dict:
    clone = work / f"clone{n}"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(KIT_HOME=str(work / f"kit-home{n}"), KIT_TRAIN_CACHE=str(work / f"train-cache{n}"))
    install = timed(["make", "venv"], clone, env, work / f"venv{n}.log")
    demo = timed(["make", "demo"], clone, env, work / f"demo{n}.log")
    metrics = json.loads((clone / "outputs" / "bert_cls" / "metrics.json").read_text())
    return {"clone": n, "install_s": install, "demo_s": demo, "accuracy": metrics["test"]["accuracy"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clones", type=int, default=3)
    p.add_argument("--keep", help="work in this directory and keep it (default: a temporary one, removed)")
    args = p.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="kit-fresh-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for n in range(1, args.clones + 1):
            row = one_clone(n, work)
            rows.append(row)
            print(
                f"clone {n}: install {row['install_s']:.0f} s, demo {row['demo_s']:.0f} s, "
                f"test accuracy {row['accuracy']:.4f} (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    accs = [round(r["accuracy"], 4) for r in rows]
    demo = [r["demo_s"] for r in rows]
    print(
        f"{datetime.date.today()}, {len(rows)} fresh clones, {os.cpu_count()} cores: demo {min(demo):.0f}-"
        f"{max(demo):.0f} s, test accuracy {min(accs):.4f}-{max(accs):.4f}, install "
        f"{min(r['install_s'] for r in rows):.0f}-{max(r['install_s'] for r in rows):.0f} s"
    )
    if len(set(accs)) != 1:
        print(f"target missed: the clones' test accuracies differ ({', '.join(f'{a:.4f}' for a in accs)})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
