"""SLURM: time from `kit submit` to the first training step of a 2-node job, against a hand-written sbatch script
that runs the same `accelerate launch` on the same cluster (tests/harness), measured in the same run.

Split per run: submitted (sbatch returned a job id), started (the job's first node wrote its first line: queue
wait and node start), first step (rendezvous, model and data set up, one optimizer step logged). Runs alternate
hand / kit; the medians are compared. Target: kit / hand <= 1.1.

    .venv/bin/python bench/slurm_submit.py [--repeats 2]
"""

import argparse
import json
import os
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
HAND = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --output={out}/slurm-%j.out
srun --output={out}/node%n.log bash -c 'export ACCELERATE_USE_CPU=1 TOKENIZERS_PARALLELISM=false; \
MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1); \
exec {python} -m accelerate.commands.launch --multi_gpu --num_machines 2 --machine_rank $SLURM_NODEID \
--main_process_ip $MASTER --main_process_port {port} --num_processes 2 --rdzv_backend static --same_network \
--mixed_precision no -m train {args}'
"""


def _wait_first_step(log: Path, started: float, timeout=240.0) -> tuple[float, float]:
    """(first line, first step) in seconds after `started`, polled from the node 0 log."""
    first_line = None
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if text and first_line is None:
            first_line = time.time() - started
        # The logged line of step 1, not a progress redraw that mentions it.
        if any(line.lstrip("\r").startswith("step 1/") for line in text.splitlines()):
            return first_line, time.time() - started
        time.sleep(0.02)
    raise RuntimeError(f"no first step in {log}")


def _train_args(base: Path, name: str) -> list[str]:
    data = write_csv(base / "d.csv", synthetic_rows(200))
    return tiny_args(data, base / f"out-{name}", base / "cache", "--max-steps", "2", "--log-every", "1",
                     "--no-save-model")


def time_hand(h, base: Path, i: int) -> dict:
    out = base / f"hand-{i}"
    out.mkdir()
    script = out / "job.sbatch"
    args = " ".join(_train_args(base, f"hand-{i}"))
    script.write_text(HAND.format(out=out, python=sys.executable, port=29400 + i, args=args))
    started = time.time()
    job = h.slurm.run(["sbatch", "--parsable", str(script)]).stdout.strip()
    submitted = time.time() - started
    first_line, step = _wait_first_step(out / "node0.log", started)
    _wait_gone(h, job)
    return {"submitted": submitted, "started": first_line, "first step": step}


def time_kit(h, base: Path, i: int, cluster: str) -> dict:
    job = base / f"kit-{i}.yaml"
    job.write_text(json.dumps({"name": "bench", "entrypoint": {"module": "train"}, "nodes": 2,
                               "procs_per_node": 1, "args": _train_args(base, f"kit-{i}")}))
    run_dir = Path(h.bed.path("work"), "runs", f"bench-{i}")
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", str(job), "--cluster", cluster, "--gpus",
                             "0", "--run-id", f"bench-{i}"], cwd=h.bed.path("work"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    first_line, step = _wait_first_step(run_dir / "node0.log", started)
    proc.wait(timeout=240)
    status = json.loads((run_dir / "status.json").read_text())
    return {"submitted": status["submitted_at"] - started, "started": first_line, "first step": step}


def _wait_gone(h, job: str) -> None:
    while h.slurm.run(["squeue", "-h", "-j", job], check=False).stdout.strip():
        time.sleep(0.2)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    runs = {"hand": [], "kit": []}
    with harness(2, ssh=False, slurm=True) as h:
        os.environ["SLURM_CONF"] = h.slurm.conf
        base = Path(h.bed.path("bench"))
        base.mkdir()
        os.makedirs(h.bed.path("work"), exist_ok=True)
        cluster = slurm_cluster_config(h.slurm, base / "cluster.yaml", python=sys.executable)
        time_hand(h, base, 99)   # the first job after slurmctld starts waits ~3 s: keep it out of the figures
        for i in range(args.repeats):
            runs["hand"].append(time_hand(h, base, i))
            runs["kit"].append(time_kit(h, base, i, cluster))
    print(f"{'':>5} {'submitted s':>11} {'started s':>9} {'first step s':>12}")
    med = {}
    for name, rows in runs.items():
        med[name] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"{name:>5} {med[name]['submitted']:>11.2f} {med[name]['started']:>9.2f} "
              f"{med[name]['first step']:>12.2f}")
    ratio = med["kit"]["first step"] / med["hand"]["first step"]
    print(f"submit to first step, kit / hand: {ratio:.2f} (target <= {TARGET}): "
          + ("met" if ratio <= TARGET else "MISSED"))
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
