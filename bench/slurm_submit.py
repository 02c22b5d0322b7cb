"""SLURM: time from `kit submit` to the first training step of a 2-node job, against a hand-written sbatch script
that runs the same `accelerate launch` on the same cluster (tests/harness), measured in the same run.

Split per run: sbatch (until the job id: for kit also its start, checks and record), queue wait (until the batch
script starts), node start (until srun's task on node 0 starts), rendezvous (until step 1 is logged: interpreter,
imports, rendezvous, model and data, one optimizer step). Runs alternate hand / kit; the medians are compared.
Target: kit / hand <= 1.1.

    .venv/bin/python bench/slurm_submit.py [--repeats 4]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.harness.configs import slurm_cluster_config  # noqa: E402
from tests.harness.session import harness  # noqa: E402
from tests.train.support import synthetic_rows, tiny_args, write_csv  # noqa: E402

TARGET = 1.1
# The logged line of step 1 (kit's carries rank 0's tag), not a progress redraw that mentions it.
SPLIT = (("started", "submitted"), ("submitted", "batch"), ("batch", "task"), ("task", "first step"))
STEP_1 = re.compile(r"^(?:\[node0/rank0\] )?step 1/")
HAND = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --output={out}/slurm-%j.out
srun --output={out}/node%n.log bash -c 'export ACCELERATE_USE_CPU=1 TOKENIZERS_PARALLELISM=false; \
MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1); \
exec {python} -m accelerate.commands.launch --multi_gpu --num_machines 2 --machine_rank $SLURM_NODEID \
--main_process_ip $MASTER --main_process_port {port} --num_processes 2 --rdzv_backend static --same_network \
--mixed_precision no {threads}-m train {args}'
"""
# Both launch with one CPU thread per process (--threads). Left to accelerate (--threads 0), kit's launch (its
# YAML says use_cpu) takes a thread per physical core and the hand-written one (no --cpu) one thread: on this
# harness both "hosts" share the same cores, so that compares thread counts, not launchers.
THREADS = 1


def _milestones(out: Path, started: float, timeout=240.0) -> dict:
    """Seconds after `started` at which each step of the start was first seen in `out`: the batch output file
    (the job left the queue: slurmd opens it before the batch script runs), node 0's log (srun started its task),
    its first line, its first logged training step. Polled every 10 ms."""
    seen = {}
    deadline = time.time() + timeout
    while time.time() < deadline:
        now = time.time() - started
        if "batch" not in seen and any(out.glob("slurm-*.out")):
            seen["batch"] = now
        log = out / "node0.log"
        if "batch" in seen and "task" not in seen and log.exists():
            seen["task"] = now
        text = log.read_text(errors="replace") if "task" in seen else ""
        if text and "first line" not in seen:
            seen["first line"] = now
        if any(STEP_1.match(line.lstrip("\r")) for line in text.splitlines()):
            seen["first step"] = now
            return seen
        time.sleep(0.01)
    raise RuntimeError(f"no first step in {out}/node0.log")


def _train_args(base: Path, name: str) -> list[str]:
    data = write_csv(base / "d.csv", synthetic_rows(200))
    return tiny_args(
        data, base / f"out-{name}", base / "cache", "--max-steps", "2", "--log-every", "1", "--no-save-model"
    )


def time_hand(h, base: Path, i: int, threads: int) -> dict:
    out = base / f"hand-{i}"
    out.mkdir()
    script = out / "job.sbatch"
    args = " ".join(_train_args(base, f"hand-{i}"))
    script.write_text(
        HAND.format(
            out=out,
            python=sys.executable,
            port=29400 + i,
            args=args,
            threads=f"--num_cpu_threads_per_process {threads} " if threads else "",
        )
    )
    started = time.time()
    job = h.slurm.run(["sbatch", "--parsable", str(script)]).stdout.strip()
    seen = {"started": 0.0, "submitted": time.time() - started, **_milestones(out, started)}
    _wait_gone(h, job)
    return seen


def time_kit(h, base: Path, i: int, cluster: str) -> dict:
    job = base / f"kit-{i}.yaml"
    # The hand script's environment: the same tokenizer setting (kit adds ACCELERATE_USE_CPU itself).
    job.write_text(
        json.dumps(
            {
                "name": "bench",
                "entrypoint": {"module": "train"},
                "nodes": 2,
                "procs_per_node": 1,
                "env": {"TOKENIZERS_PARALLELISM": "false"},
                "args": _train_args(base, f"kit-{i}"),
            }
        )
    )
    run_dir = Path(h.bed.path("work"), "runs", f"bench-{i}")
    started = time.time()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "launcher",
            "submit",
            str(job),
            "--cluster",
            cluster,
            "--gpus",
            "0",
            "--run-id",
            f"bench-{i}",
        ],
        cwd=h.bed.path("work"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seen = _milestones(run_dir, started)
    proc.wait(timeout=240)
    status = json.loads((run_dir / "status.json").read_text())
    return {"started": 0.0, "submitted": status["submitted_at"] - started, **seen}


def _wait_gone(h, job: str) -> None:
    while h.slurm.run(["squeue", "-h", "-j", job], check=False).stdout.strip():
        time.sleep(0.2)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--threads", type=int, default=THREADS, help="CPU threads per process for both; 0: accelerate's")
    args = p.parse_args()
    runs = {"hand": [], "kit": []}
    with harness(2, ssh=False, slurm=True) as h:
        os.environ["SLURM_CONF"] = h.slurm.conf
        base = Path(h.bed.path("bench"))
        base.mkdir()
        os.environ["KIT_HOME"] = str(base / "kit-home")  # its runs stay out of your own index of runs
        os.makedirs(h.bed.path("work"), exist_ok=True)
        threads = {"cpu_threads_per_process": args.threads} if args.threads else {}
        cluster = slurm_cluster_config(h.slurm, base / "cluster.yaml", python=sys.executable, **threads)
        time_hand(h, base, 99, args.threads)  # the first job after slurmctld starts waits ~3 s: not counted
        load = os.getloadavg()[0]
        for i in range(args.repeats):
            # Pairs alternate which goes first, so a load that rises or falls during the run favours neither.
            for name in ("hand", "kit") if i % 2 == 0 else ("kit", "hand"):
                runs[name].append(
                    time_hand(h, base, i, args.threads) if name == "hand" else time_kit(h, base, i, cluster)
                )
        load = max(load, os.getloadavg()[0])
    print("medians in seconds; split: sbatch, queue wait, node start, rendezvous (see the docstring)")
    print(f"{'':>5} {'sbatch':>7} {'queue':>7} {'node':>7} {'rdzv':>7} {'1st line':>9} {'1st step':>9}")
    med = {}
    for name, rows in runs.items():
        med[name] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        split = [statistics.median(r[b] - r[a] for r in rows) for a, b in SPLIT]
        print(
            f"{name:>5} "
            + " ".join(f"{v:>7.2f}" for v in split)
            + f" {med[name]['first line']:>9.2f} {med[name]['first step']:>9.2f}"
        )
    for name, rows in runs.items():
        print(f"{name:>5} first step, each run: " + " ".join(f"{r['first step']:.2f}" for r in rows))
    pairs = sorted(k["first step"] / m["first step"] for m, k in zip(runs["hand"], runs["kit"]))
    print(
        f"kit / hand per pair: {' '.join(f'{r:.2f}' for r in pairs)} (median {statistics.median(pairs):.2f}); "
        f"1-minute load average up to {load:.1f} on {os.cpu_count()} CPUs"
    )
    ratio = med["kit"]["first step"] / med["hand"]["first step"]
    print(
        f"submit to first step, kit / hand: {ratio:.2f} (target <= {TARGET}): "
        + ("met" if ratio <= TARGET else "MISSED")
    )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
