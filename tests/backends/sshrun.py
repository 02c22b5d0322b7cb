"""Helpers for the SSH backend tests: a kit cluster config for the harness hosts, and what runs on them."""

import os
import sys

import yaml

from launcher.backends.ssh.gate import LOADER
from tests.harness.configs import ssh_cluster_config

PYTHON = sys.executable


def cluster(ssh_hosts, tmp_path, ssh_options=None, **fields):
    """An ssh cluster config for the harness hosts; every node says its hostname first (setup line).
    ssh_options: keys to change in its `ssh:` section."""
    fields.setdefault("python", PYTHON)
    fields.setdefault("setup", ['echo "kit-test host $(hostname)"'])
    fields.setdefault("teardown_grace", 30)
    path = ssh_cluster_config(ssh_hosts, tmp_path / "ssh-cluster.yaml", **fields)
    if ssh_options:
        data = yaml.safe_load(open(path))
        data["ssh"].update(ssh_options)
        with open(path, "w") as f:
            yaml.safe_dump(data, f, sort_keys=False)
    return path


def workdir(ssh_hosts) -> str:
    return ssh_hosts.bed.path("work")


def run_processes(host, run_id: str) -> list:
    """Processes inside the host's PID namespace that carry the run's id in their environment."""
    marker = f"KIT_RUN_ID={run_id}".encode()
    found = []
    for p in host.processes():
        try:
            with open(f"/proc/{p['pid']}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.append(p)
        except OSError:
            continue
    return found


def watchdogs(host, run_id: str) -> list:
    """The run's watchdogs on the host (they carry no run id in their environment: the secrets' JSON does), and
    checks waiting for go: a python started with kit's check loader (its program, the watchdog's source in it,
    comes on stdin) whose node command names the run."""
    return [p for p in host.processes() if LOADER in p["cmdline"] and any(run_id in c for c in p["cmdline"])]


def leftovers(ssh_hosts, run_id: str) -> dict:
    return {h.name: run_processes(h, run_id) + watchdogs(h, run_id) for h in ssh_hosts.hosts
            if run_processes(h, run_id) or watchdogs(h, run_id)}


def node_log(ssh_hosts, run_id: str, rank: int) -> str:
    path = os.path.join(workdir(ssh_hosts), "runs", run_id, f"node{rank}.log")
    return open(path).read() if os.path.exists(path) else ""
