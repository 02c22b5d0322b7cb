"""One poller per kit process for SLURM: every run and array task it follows is asked about in one batched
squeue, backing off to one query per 5 s while nothing changes, however many jobs; a cancel's wait asks in rounds
too. Counted on the real test cluster with wrapper scripts first on PATH around SLURM's commands, each logging
its call (time, the kit process that ran it, argv) and then running the real command."""

import os
import shutil
import signal
import subprocess
import sys
import time

import yaml

from tests.backends.slurmrun import cluster_file, kit, status_of, wait_for, workdir, write_job

COMMANDS = ("squeue", "scontrol", "sacct", "scancel", "sbatch")
STEADY = 5.0   # at most one query per this many seconds once nothing changes


def _wrapped(tmp_path) -> tuple[dict, str]:
    """(kit's environment with the wrappers first on PATH, the log they append to)."""
    bindir, log = tmp_path / "wrapped", tmp_path / "slurm-calls.log"
    bindir.mkdir()
    for name in COMMANDS:
        real = shutil.which(name)
        assert real, f"{name} not found"
        (bindir / name).write_text(f'#!/bin/sh\necho "$(date +%s.%N) $PPID {name} $*" >> {log}\nexec {real} "$@"\n')
        (bindir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}, str(log)


def _calls(log: str) -> list[tuple[float, int, list[str]]]:
    with open(log, encoding="utf-8") as f:
        return [(float(t), int(pid), argv) for t, pid, *argv in (line.split() for line in f if line.strip())]


def _queries(calls) -> list:
    """The calls that ask slurmctld about jobs (`scontrol show hostnames` only parses its argument, here)."""
    return [c for c in calls
            if c[2][0] in ("squeue", "sacct") or (c[2][0] == "scontrol" and c[2][1:3] != ["show", "hostnames"])]


def _window(queries, start: float, end: float) -> list:
    return [q for q in queries if start <= q[0] < end]


def test_one_followed_run_is_asked_about_once_per_5_s_once_steady(slurm_cluster, tmp_path):
    env, log = _wrapped(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, name="polled", nodes=2, args=["--out", str(out), "--linger", "40"])
    r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id",
            "slurm-polled", cwd=workdir(slurm_cluster), env=env, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    calls = _calls(log)
    submitted = next(t for t, _, argv in calls if argv[0] == "sbatch")
    # The job runs ~40 s after its ranks start: from 15 s to 35 s after sbatch nothing changes (before: one
    # scontrol a second, ~20).
    steady = _window(_queries(calls), submitted + 15, submitted + 35)
    assert len(steady) <= 20 / STEADY + 1, [" ".join(q[2]) for q in steady]
    assert status_of(slurm_cluster, "slurm-polled")["state"] == "succeeded"


def _sweep(tmp_path, root: str, parallel: int, values: list) -> str:
    spec = {"method": "grid", "metric": "rank", "goal": "max", "parallel": parallel, "output_arg": "--out",
            "output_root": root, "parameters": {"--fail-code": values}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_a_sweep_of_4_trials_is_one_batched_query_and_its_cancel_asks_in_rounds(slurm_cluster, tmp_path):
    env, log = _wrapped(tmp_path)
    here = workdir(slurm_cluster)
    sweep_id = "slurm-polled-sweep"
    for i in range(4):
        os.makedirs(os.path.join(here, "probe-polled", f"{sweep_id}-t{i}"))
    # Four 1-node trials at once on the 2-node cluster (2 CPUs each); the ranks stop 6 s after SIGTERM.
    job = write_job(tmp_path, name="polledswp", nodes=1, args=["--linger", "300", "--on-term", "save:6"])
    sweep = _sweep(tmp_path, "probe-polled", 4, [3, 4, 5, 6])
    follower = subprocess.Popen([sys.executable, "-m", "launcher", "submit", job, "--sweep", sweep,
                                 "--cluster", cluster_file(slurm_cluster, tmp_path, cpu_threads_per_process=1),
                                 "--gpus", "0", "--run-id", sweep_id], cwd=here, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    try:
        trials = [f"{sweep_id}-t{i}" for i in range(4)]
        assert wait_for(lambda: all(os.path.exists(os.path.join(here, "runs", t, "status.json")) and
                                    status_of(slurm_cluster, t)["state"] == "running" for t in trials),
                        timeout=120), follower.stdout.read() if follower.poll() is not None else "not running"
        seen_all = time.time()
        time.sleep(30)
        queries = [q for q in _queries(_calls(log)) if q[1] == follower.pid]
        steady = _window(queries, seen_all + 5, seen_all + 30)
        # 4 trials, one query per round: not 4x (before: one scontrol per trial every 2 s, ~50).
        assert len(steady) <= 25 / STEADY + 1, [" ".join(q[2]) for q in steady]
        assert all(q[2][0] == "squeue" and all(f"_{i}" in q[2][1] for i in range(4)) for q in steady), steady
        # kit cancel of the sweep: one batched query per round, backing off, until every task ended (before:
        # every trial every 0.5 s while the ranks take 6 s to stop, ~50).
        before = time.time()
        cancel = kit("cancel", sweep_id, cwd=here, env=env, timeout=180)
        assert cancel.returncode == 0, cancel.stderr
        assert "cancelled" in cancel.stdout + cancel.stderr, cancel.stdout + cancel.stderr
        calls = [c for c in _calls(log) if c[0] >= before and c[1] not in (follower.pid,)]
        waited = _queries(calls)
        rounds = [q for q in waited if q[2][0] == "squeue"]
        assert rounds and all(all(f"_{i}" in q[2][1] for i in range(4)) for q in rounds[-3:]), waited
        # Each task's end read once from scontrol (its exit code); the other asks are batched rounds.
        assert len(waited) <= 4 + 4 + len(rounds), [" ".join(q[2]) for q in waited]
        assert len(rounds) <= 8, [" ".join(q[2]) for q in rounds]
        assert all(status_of(slurm_cluster, t)["state"] == "cancelled" for t in trials)
    finally:
        if follower.poll() is None:
            follower.send_signal(signal.SIGINT)
        follower.wait(timeout=60)
