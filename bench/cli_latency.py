"""CLI latency: median wall time of `kit submit --dry-run` against `accelerate launch --help`, same run.

Target: kit's dry-run at most 0.1x accelerate's --help (kit imports no torch/transformers/deepspeed)."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def wall(argv, cwd) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def median_of(argv, cwd, repeat) -> float:
    wall(argv, cwd)  # warm the page cache; not counted
    return statistics.median(wall(argv, cwd) for _ in range(repeat))


def ssh_cluster(path: str, hosts: int) -> None:
    cluster = {
        "name": "big",
        "backend": "ssh",
        "gpus_per_node": 8,
        "workdir": "/srv/kit",
        "hosts": [{"name": f"gpu{i:03d}", "address": f"10.1.{i // 250}.{i % 250 + 1}"} for i in range(hosts)],
    }
    with open(path, "w") as f:
        yaml.safe_dump(cluster, f)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per kit command")
    parser.add_argument("--baseline-repeat", type=int, default=3, help="timed runs of accelerate launch --help")
    args = parser.parse_args()
    kit = os.path.join(BIN, "kit")
    job = os.path.join(REPO, "jobs", "bert_cls.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "ssh64.yaml")
        ssh_cluster(big, 64)
        cases = {
            "slurm 2 nodes x 8 GPUs": [
                kit,
                "submit",
                job,
                "--cluster",
                os.path.join(REPO, "cluster_configs", "slurm.example.yaml"),
                "--nodes",
                "2",
                "--gpus",
                "8",
                "--dry-run",
            ],
            "ssh 64 nodes x 8 GPUs": [
                kit,
                "submit",
                job,
                "--cluster",
                big,
                "--nodes",
                "64",
                "--gpus",
                "8",
                "--dry-run",
            ],
        }
        baseline = median_of([os.path.join(BIN, "accelerate"), "launch", "--help"], tmp, args.baseline_repeat)
        print(f"baseline  accelerate launch --help     median {baseline:7.3f} s")
        worst = 0.0
        for name, argv in cases.items():
            t = median_of(argv, tmp, args.repeat)
            worst = max(worst, t / baseline)
            print(f"kit dry-run  {name:<24} median {t:7.3f} s   ratio {t / baseline:.3f}x")
    print(f"worst ratio {worst:.3f}x (target <= 0.100x): {'PASS' if worst <= 0.1 else 'FAIL'}")
    # A missed target fails `make bench`.
    return 0 if worst <= 0.1 else 1


if __name__ == "__main__":
    sys.exit(main())
