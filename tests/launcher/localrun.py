"""Helpers for tests that launch real local runs through the `kit` CLI."""

import json
import os
import subprocess
import sys
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "tests", "launcher", "scripts", "rank_probe.py")
LOCAL_CLUSTER = os.path.join(REPO, "cluster_configs", "local.yaml")


def write_job(tmp_path, name="probe", nodes=2, procs=1, args=(), **extra) -> str:
    job = {"name": name, "entrypoint": {"script": PROBE}, "args": list(args), "nodes": nodes,
           "procs_per_node": procs, **extra}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job))
    return str(path)


def kit(*argv, cwd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "launcher", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=kw.pop("timeout", 180), **kw)


def kit_background(*argv, cwd) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "launcher", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def reports(out_dir) -> list[dict]:
    names = sorted(n for n in os.listdir(out_dir) if n.startswith("rank") and n.endswith(".json"))
    return [json.load(open(os.path.join(out_dir, n))) for n in names]


def wait_for(predicate, timeout=120.0, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def pids_of_run(run_id: str) -> list[int]:
    """Every process on this machine whose environment carries the run's id."""
    marker = f"KIT_RUN_ID={run_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def rank_pids(run_id: str, rank: int) -> list[int]:
    """The rank's own process: it carries the run's id and RANK=rank (its launcher carries no RANK)."""
    found = []
    for pid in pids_of_run(run_id):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"RANK={rank}".encode() in f.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return found
