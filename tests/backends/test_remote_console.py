"""The console shows the cause on SSH and SLURM too: a rank that raises on one host, ranks on both hosts that die
in the collective it left; kit's console shows the failing rank's traceback and one note, the others' tracebacks
are in the node logs only."""

import os

import yaml

from tests.backends.slurmrun import cluster_file, workdir as slurm_workdir
from tests.backends.sshrun import cluster, workdir as ssh_workdir
from tests.launcher.localrun import kit

CRASH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "launcher", "scripts", "collective_crash.py")


def _job(tmp_path) -> str:
    path = tmp_path / "crash.yaml"
    path.write_text(yaml.safe_dump({"name": "crash", "entrypoint": {"script": CRASH}, "nodes": 2,
                                    "procs_per_node": 2, "args": ["--fail-rank", "3"]}))
    return str(path)


def _shows_the_cause(r, run_id: str, logs: str) -> None:
    console = r.stdout
    assert console.count("Traceback") == 1 and "/rank3] [rank3]: Traceback" in console, console
    assert "ValueError: bad batch at step 3" in console and "by peer" not in console, console
    assert "by peer" in logs and logs.count("Traceback (most recent call last)") >= 2
    assert len([ln for ln in r.stderr.splitlines() if "failed too" in ln]) == 1, r.stderr
    assert r.stderr.splitlines()[-1].startswith(f"kit: run {run_id} failed: node 1 (n2) rank 3 exited 1: "
                                                f"ValueError: bad batch at step 3"), r.stderr


def _logs(record) -> str:
    return "".join(open(os.path.join(record, n)).read() for n in sorted(os.listdir(record)) if n.endswith(".log"))


def test_ssh_console_shows_the_failing_ranks_traceback(ssh_hosts, tmp_path):
    here = ssh_workdir(ssh_hosts)
    r = kit("submit", _job(tmp_path), "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-crash", cwd=here,
            timeout=300)
    assert r.returncode == 1, r.stderr
    _shows_the_cause(r, "ssh-crash", _logs(os.path.join(here, "runs", "ssh-crash")))


def test_slurm_console_shows_the_failing_ranks_traceback(slurm_cluster, tmp_path):
    here = slurm_workdir(slurm_cluster)
    r = kit("submit", _job(tmp_path), "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
            "--run-id", "slurm-crash", cwd=here, timeout=300)
    assert r.returncode == 1, r.stderr
    _shows_the_cause(r, "slurm-crash", _logs(os.path.join(here, "runs", "slurm-crash")))
