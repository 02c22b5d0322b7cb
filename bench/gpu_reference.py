"""The reference job on one GPU with bf16 under DDP, DeepSpeed ZeRO-2 and FSDP: samples/s, peak memory, MFU.

Each strategy is a real `kit submit jobs/bert_cls.yaml --gpus 1 --mixed-precision bf16 --strategy S` with a
`base`-size model for a few hundred steps; the figures come from each run's metrics.json.  Needs a machine with a
GPU (the embedded local cluster counts them); `--dry-run` prints the three plans anywhere a GPU cluster is given.

    .venv/bin/python bench/gpu_reference.py [--steps 300] [--cluster FILE] [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STRATEGIES = ("ddp", "deepspeed", "fsdp")


def kit_argv(strategy: str, steps: int, out: Path, cluster: str | None, dry_run: bool) -> list[str]:
    train_args = [
        "--model",
        "base",
        "--max-steps",
        str(steps),
        "--eval-every",
        str(10**9),
        "--save-every",
        str(10**9),
        "--resume",
        "no",
        "--no-save-model",
        "--pretrain-epochs",
        "0",
        "--output-dir",
        str(out),
    ]
    argv = [
        sys.executable,
        "-m",
        "launcher",
        "submit",
        str(REPO / "jobs" / "bert_cls.yaml"),
        "--gpus",
        "1",
        "--mixed-precision",
        "bf16",
        "--strategy",
        strategy,
        "--set",
        f"args={json.dumps(train_args)}",
    ]
    if cluster:
        argv += ["--cluster", cluster]
    return argv + (["--dry-run"] if dry_run else [])


def summary(strategy: str, metrics: dict) -> str:
    peak = max((row["peak_memory_mib"] for row in metrics.get("gpu") or []), default=None)
    mfu = metrics.get("mfu")
    return (
        f"{strategy:10s} {metrics['strategy']:16s} {metrics['samples_per_s']:>10.1f} "
        f"{metrics['tokens_per_s']:>12.0f} {'-' if peak is None else f'{peak:.0f}':>14s} "
        f"{'-' if mfu is None else f'{100 * mfu:.1f}%':>7s}  {metrics.get('device_name') or ''}"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--cluster", help="cluster config (default: this machine)")
    p.add_argument("--out", default=str(REPO / "outputs" / "gpu_reference"))
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args()
    rows, failed = [], []
    for strategy in STRATEGIES:
        out = Path(a.out) / strategy
        result = subprocess.run(kit_argv(strategy, a.steps, out, a.cluster, a.dry_run), cwd=REPO)
        if result.returncode != 0:
            failed.append(f"{strategy} (exit {result.returncode})")
        elif not a.dry_run:
            rows.append(summary(strategy, json.loads((out / "metrics.json").read_text())))
    if rows:
        print(f"\n{'strategy':10s} {'engaged':16s} {'samples/s':>10s} {'tokens/s':>12s} {'peak MiB':>14s} {'MFU':>7s}")
        print("\n".join(rows))
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
