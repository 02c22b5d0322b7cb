"""Sized CPU threads on the embedded local cluster against accelerate's default, measured in the same run.

A small 2-node local CPU run (bench/local_threads_rank.py: an MLP under DDP over gloo) is submitted through
kit twice per round, interleaved so that background load hits both alike:
  * sized: no --cluster, so kit's embedded local cluster passes --num_cpu_threads_per_process =
    usable cores / (nodes x processes per node), at least 1;
  * default: a local cluster file without cpu_threads_per_process, so accelerate picks the threads itself
    (physical cores / its own node's processes: every simulated node takes every core).
Prints steps/s of both and their ratio. Target: sized >= 0.95 x default (never slower); exits 1 if missed.

    .venv/bin/python bench/local_threads.py [--rounds 2] [--steps 30]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parent
KIT = [sys.executable, "-m", "launcher"]
TARGET = 0.95
# Thread settings from the submitting shell would override both variants alike and hide the difference.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def write_specs(tmp: Path, steps: int, nodes: int) -> None:
    job = {
        "name": "local-threads",
        "entrypoint": {"script": str(BENCH / "local_threads_rank.py")},
        "args": ["--steps", str(steps), "--out", "result.json"],
        "nodes": nodes,
        "procs_per_node": 1,
    }
    (tmp / "job.yaml").write_text(yaml.safe_dump(job))
    (tmp / "accelerate_default.yaml").write_text(yaml.safe_dump({"name": "plain", "backend": "local"}))


def run_once(tmp: Path, variant: str, index: int) -> dict:
    """Submit the job through kit (workdir tmp) and return rank 0's report."""
    result_file = tmp / "result.json"
    result_file.unlink(missing_ok=True)
    cluster = ["--cluster", "accelerate_default.yaml"] if variant == "default" else []
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env["PYTHONPATH"] = str(BENCH.parent)  # `python -m launcher` from this checkout, whatever the cwd
    done = subprocess.run(
        [*KIT, "submit", "job.yaml", *cluster, "--run-id", f"{variant}-{index}"],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 or not result_file.exists():
        print(done.stdout[-3000:])
        raise SystemExit(f"the {variant} run failed (exit code {done.returncode})")
    return json.loads(result_file.read_text())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--nodes", type=int, default=2)
    a = p.parse_args()
    results = {"sized": [], "default": []}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["KIT_HOME"] = os.path.join(tmp, "kit-home")  # its runs stay out of your own index of runs
        write_specs(Path(tmp), a.steps, a.nodes)
        for i in range(a.rounds):
            for variant in results:
                results[variant].append(run_once(Path(tmp), variant, i))
    speed = {}
    for variant, reports in results.items():
        rates = [r["steps_per_s"] for r in reports]
        speed[variant] = statistics.median(rates)
        print(
            f"{variant:<8} {reports[0]['threads']} thread(s) per process, {a.nodes} local nodes: "
            f"{speed[variant]:.2f} steps/s  (rounds: {', '.join(f'{x:.2f}' for x in rates)})"
        )
    ratio = speed["sized"] / speed["default"]
    print(f"ratio sized/default: {ratio:.2f}x  (target >= {TARGET}: {'PASS' if ratio >= TARGET else 'FAIL'})")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
