"""Submit to first step with each node's launcher: `accelerate launch` against torchrun (job `launcher:
torchrun`), the same 2-node local run of the training module, alternating which goes first, in one run.

Both start one launcher process per node (accelerate's runs torchrun's agent in-process after importing accelerate),
so they should be level. Target: torchrun / accelerate <= 1.10 (medians; single pairs vary by about 20 % on a
2-core machine). Exit 1 when missed.

    .venv/bin/python bench/launchers.py [--pairs 4]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.launcher.localrun import LOCAL_CLUSTER  # noqa: E402
from tests.train.launch import link_reference_module  # noqa: E402
from tests.train.support import synthetic_rows, tiny_args, write_csv  # noqa: E402

TARGET = 1.10
STEP = re.compile(r"^(?:\[node\d+/rank\d+\] )?step (\d+)/")


def _job(base: Path, launcher: str, k: int) -> str:
    link_reference_module(base)  # kit runs from base, the nodes' workdir: the project that holds train/
    data = write_csv(base / "d.csv", synthetic_rows(200))
    args = tiny_args(
        data, base / f"out-{launcher}-{k}", base / "cache", "--max-steps", "2", "--log-every", "1", "--no-save-model"
    )
    path = base / f"{launcher}-{k}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": f"bench-{launcher}",
                "entrypoint": {"module": "train"},
                "args": args,
                "nodes": 2,
                "procs_per_node": 1,
                "launcher": launcher,
            }
        )
    )
    return str(path)


def first_step(base: Path, launcher: str, k: int) -> float:
    """Seconds from `kit submit` to the first logged training step."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "launcher",
            "submit",
            _job(base, launcher, k),
            "--cluster",
            LOCAL_CLUSTER,
            "--run-id",
            f"{launcher}-{k}",
        ],
        cwd=base,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen = None
    for line in proc.stdout:
        if seen is None and STEP.match(line):
            seen = time.monotonic() - started
    proc.wait(timeout=600)
    if proc.returncode != 0 or seen is None:
        raise RuntimeError(f"{launcher} run {k} failed (exit {proc.returncode})")
    return seen


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=4)
    args = p.parse_args()
    times = {"accelerate": [], "torchrun": []}
    with tempfile.TemporaryDirectory(prefix="kit-bench-launchers-") as tmp:
        os.environ["KIT_HOME"] = os.path.join(tmp, "kit-home")  # its runs stay out of your own index of runs
        first_step(Path(tmp), "accelerate", -1)  # warm the tokenizer cache and the page cache for both
        for k in range(args.pairs):
            order = ("accelerate", "torchrun") if k % 2 == 0 else ("torchrun", "accelerate")
            for launcher in order:
                times[launcher].append(first_step(Path(tmp), launcher, k))
            print(
                f"pair {k + 1}: accelerate {times['accelerate'][-1]:.2f} s, torchrun {times['torchrun'][-1]:.2f} s",
                flush=True,
            )
    acc, tr = statistics.median(times["accelerate"]), statistics.median(times["torchrun"])
    ok = tr / acc <= TARGET
    print(
        f"median submit -> first step: accelerate launch {acc:.2f} s, torchrun {tr:.2f} s; torchrun / accelerate "
        f"= {tr / acc:.2f} (target <= {TARGET}): {'met' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
