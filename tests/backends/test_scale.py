"""Worlds of 8 nodes on 8 namespace hosts (sshd and slurmd each): over SSH and through SLURM the world forms with
8 nodes, and stopping it leaves nothing on any host, also when Ctrl-C comes while the ranks are still starting.
(bench/scale.py measures the same at 2, 8 and 32 hosts.)"""

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.harness.configs import slurm_cluster_config, ssh_cluster_config
from tests.harness.preflight import require
from tests.harness.session import harness
from tests.launcher.localrun import REPO, wait_for

pytestmark = [pytest.mark.harness, pytest.mark.slow]

N = 8
PROBE = os.path.join(REPO, "tests", "launcher", "scripts", "world_probe.py")


@pytest.fixture(scope="module")
def wide():
    """8 hosts with sshd and SLURM, for this module only (the session's testbed has 2)."""
    require("ssh")
    require("slurm")
    with harness(N, ssh=True, slurm=True) as h:
        yield h


def _submit(h, tmp_path, backend, run_id):
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    job = tmp_path / "job.yaml"
    job.write_text(json.dumps({"name": "wide", "entrypoint": {"script": PROBE}, "args": [str(stamps)],
                               "nodes": N, "procs_per_node": 1}))
    if backend == "ssh":
        cluster, extra = ssh_cluster_config(h.ssh, tmp_path / "c.yaml", python=sys.executable), []
    else:
        cluster, extra = slurm_cluster_config(h.slurm, tmp_path / "c.yaml", python=sys.executable), ["--gpus", "0"]
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", str(job), "--cluster", cluster,
                             "--run-id", run_id, *extra], cwd=h.bed.path("work"), env=_env(h),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, stamps


def _env(h):
    return {**os.environ, "SLURM_CONF": h.slurm.conf}


def _stamped(stamps, kind):
    return [open(stamps / n).read().split() for n in os.listdir(stamps) if n.startswith(kind + "-")
            and not n.endswith(".tmp")]


def _left(h, run_id, job_id=""):
    """host -> what of the run still lives there: its id in a process's environment or command line, or its
    job's slurmstepd."""
    found, marker = {}, f"KIT_RUN_ID={run_id}".encode()
    for host in h.bed.hosts:
        for p in host.processes():
            line = " ".join(p["cmdline"])
            try:
                env = open(f"/proc/{p['pid']}/environ", "rb").read().split(b"\0")
            except OSError:
                env = []
            if marker in env or run_id in line or (job_id and f"[{job_id}." in line):
                found.setdefault(host.name, []).append(line[:100])
    return found


def _world_of_8(proc, stamps):
    assert wait_for(lambda: len(_stamped(stamps, "world")) == N or proc.poll() is not None, timeout=900), \
        "the world did not form"
    assert proc.poll() is None, proc.stdout.read()[-3000:]
    # Every rank saw a world of 8 whose all-reduce of rank + 1 summed 1 + ... + 8.
    assert sorted(s[1:] for s in _stamped(stamps, "world")) == [[str(N), str(N * (N + 1) // 2)]] * N


def test_ssh_world_of_8_forms_and_ctrl_c_leaves_nothing_on_any_host(wide, tmp_path):
    proc, stamps = _submit(wide, tmp_path, "ssh", "wide-ssh")
    _world_of_8(proc, stamps)
    assert _left(wide, "wide-ssh").keys() == {h.name for h in wide.bed.hosts}   # the check sees every node's run
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-3000:]
    assert wait_for(lambda: not _left(wide, "wide-ssh"), timeout=20, interval=0.25), _left(wide, "wide-ssh")


def test_ssh_ctrl_c_while_8_ranks_start_leaves_nothing_on_any_host(wide, tmp_path):
    proc, stamps = _submit(wide, tmp_path, "ssh", "wide-ssh-early")
    assert wait_for(lambda: _stamped(stamps, "started") or proc.poll() is not None, timeout=600)
    assert proc.poll() is None, proc.stdout.read()[-3000:]
    proc.send_signal(signal.SIGINT)   # one rank is in its script, the others still importing or not yet there
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-3000:]
    assert len(_stamped(stamps, "world")) < N
    assert wait_for(lambda: not _left(wide, "wide-ssh-early"), timeout=20, interval=0.25), \
        _left(wide, "wide-ssh-early")


def test_slurm_world_of_8_forms_and_cancel_leaves_nothing_on_any_host(wide, tmp_path):
    proc, stamps = _submit(wide, tmp_path, "slurm", "wide-slurm")
    _world_of_8(proc, stamps)
    proc.send_signal(signal.SIGINT)   # stops following only: the job keeps running
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "the job keeps running" in out, out[-3000:]
    status = json.load(open(os.path.join(wide.bed.path("work"), "runs", "wide-slurm", "status.json")))
    job_id = str(status["handle"]["job_id"])
    assert len(_left(wide, "wide-slurm", job_id)) == N
    cancel = subprocess.run([sys.executable, "-m", "launcher", "cancel", "wide-slurm"], cwd=wide.bed.path("work"),
                            env=_env(wide), capture_output=True, text=True, timeout=300)
    assert cancel.returncode == 0, cancel.stdout + cancel.stderr
    assert wait_for(lambda: not _left(wide, "wide-slurm", job_id), timeout=60, interval=0.25), \
        _left(wide, "wide-slurm", job_id)
    queue = wide.slurm.run(["squeue", "-h", "-j", job_id, "-o", "%T"], check=False).stdout.strip()
    assert queue in ("", "CANCELLED", "COMPLETING"), queue
