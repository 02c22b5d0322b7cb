"""Real local runs: a secret reaches the rank but no artifact, and stray launcher variables in the submitter's
shell do not reach the ranks or change the world."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
import psutil
import yaml

from tests.launcher.localrun import REPO, kit, pids_of_run, reports, wait_for

PROBE = os.path.join(REPO, "tests", "launcher", "scripts", "env_probe.py")
# One value per way a secret enters; 'z' and '-' keep them from ever matching a hex digest by chance.
SECRETS = {
    "HF_TOKEN": "zz-job-env-secret-name-1f",          # job env, secret-looking name
    "WANDB_API_KEY": "zz-cluster-env-secret-name-2e",  # cluster env, secret-looking name
    "UPSTREAM_URL": "zz-passthrough-from-shell-3d",    # secret_env, value from the submitter's environment
    "DB_URL": "zz-secret-env-in-job-env-4c",           # secret_env, value in the job's env
    "CACHE_URL": "zz-secret-env-in-cluster-env-5b",    # secret_env, value in the cluster's env
    "DSN": "zz-secret-env-from-set-6a",                # secret_env, value from --set env.DSN=...
    "API_TOKEN": "zz-secret-name-from-set-79",         # secret-looking name, value from --set
}
STRAY = {"ACCELERATE_NUM_PROCESSES": "1", "PET_NNODES": "3", "WORLD_SIZE": "7", "LOCAL_WORLD_SIZE": "5",
         "MASTER_PORT": "1"}


def _write(path, data) -> str:
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _secret_setup(tmp, backend="local"):
    cluster = {"name": "c", "backend": backend, "cpu_threads_per_process": 1,
               "env": {"WANDB_API_KEY": SECRETS["WANDB_API_KEY"], "CACHE_URL": SECRETS["CACHE_URL"]}}
    if backend == "slurm":
        cluster["workdir"] = str(tmp)
    args = ["--out", str(tmp / "out"), "--hold", str(tmp / "release")]
    for name in SECRETS:
        args += ["--hash", name]
    job = {"name": "sec", "entrypoint": {"script": PROBE}, "nodes": 1, "procs_per_node": 1, "args": args,
           "env": {"HF_TOKEN": SECRETS["HF_TOKEN"], "DB_URL": SECRETS["DB_URL"], "PLAIN": "visible-value"},
           "secret_env": ["UPSTREAM_URL", "DB_URL", "CACHE_URL", "DSN"]}
    argv = ("submit", _write(tmp / "job.yaml", job), "--cluster", _write(tmp / f"{backend}.yaml", cluster),
            "--set", f"env.DSN={SECRETS['DSN']}", "--set", f"env.API_TOKEN={SECRETS['API_TOKEN']}")
    return argv, {**os.environ, "UPSTREAM_URL": SECRETS["UPSTREAM_URL"]}


def _leaks(text: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in text]


def test_secrets_in_no_dry_run_output(tmp_path):
    for backend in ("local", "slurm"):
        argv, env = _secret_setup(tmp_path, backend)
        for fmt in ("text", "json"):
            r = kit(*argv, "--dry-run", "--format", fmt, "--run-id", "dry", cwd=tmp_path, env=env)
            assert r.returncode == 0, r.stderr
            assert _leaks(r.stdout + r.stderr) == [], (backend, fmt)
            assert "visible-value" in r.stdout and "****" in r.stdout
    # The sbatch script was in that output (files are printed in full): the scan covered it.
    assert "#SBATCH" in r.stdout


def _node_cmdlines(run_id: str, kit_pid: int) -> dict[int, str]:
    """Command lines of every process of the run: those carrying its KIT_RUN_ID, and kit's descendants except
    kit itself (whose own argv holds what the user typed, --set values included)."""
    pids = set(pids_of_run(run_id))
    pids |= {p.pid for p in psutil.Process(kit_pid).children(recursive=True)}
    out = {}
    for pid in pids:
        try:
            out[pid] = "\0".join(psutil.Process(pid).cmdline())
        except psutil.Error:
            continue
    return out


@pytest.mark.slow
def test_secret_reaches_the_rank_and_no_artifact(tmp_path):
    argv, env = _secret_setup(tmp_path)
    (tmp_path / "out").mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "launcher", *argv, "--run-id", "sec-run"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: os.path.exists(tmp_path / "out" / "rank0.json"), timeout=150)
        cmdlines = _node_cmdlines("sec-run", proc.pid)
    finally:
        (tmp_path / "release").write_text("")
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert len(cmdlines) >= 2, cmdlines       # the launcher and the rank at least
    assert {pid: _leaks(c) for pid, c in cmdlines.items() if _leaks(c)} == {}
    assert _leaks(stdout + stderr) == []
    run_dir = tmp_path / "runs" / "sec-run"
    scanned = {}
    for path in run_dir.rglob("*"):
        if path.is_file():
            scanned[str(path.relative_to(run_dir))] = _leaks(path.read_text(errors="replace"))
    assert {"job.yaml", "cluster.yaml", "plan.json", "status.json", "node0.log"} <= scanned.keys()
    assert {p: leaks for p, leaks in scanned.items() if leaks} == {}
    assert "env probe rank 0/1 ready" in (run_dir / "node0.log").read_text()
    # ... while the rank did get every value.
    hashes = reports(tmp_path / "out")[0]["hashes"]
    assert hashes == {n: hashlib.sha256(v.encode()).hexdigest() for n, v in SECRETS.items()}


@pytest.mark.slow
def test_stray_launcher_variables_do_not_change_the_world(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    args = ["--out", str(out)] + [w for name in STRAY for w in ("--show", name)]
    job = {"name": "stray", "entrypoint": {"script": PROBE}, "nodes": 2, "procs_per_node": 1, "args": args}
    cluster = {"name": "c", "backend": "local", "cpu_threads_per_process": 1}
    r = kit("submit", _write(tmp_path / "job.yaml", job), "--cluster", _write(tmp_path / "c.yaml", cluster),
            "--run-id", "stray", cwd=tmp_path, env={**os.environ, **STRAY})
    assert r.returncode == 0, r.stderr + r.stdout
    got = reports(out)
    assert [g["rank"] for g in got] == [0, 1]
    assert all(g["world_size"] == 2 and g["dist_world"] == 2 for g in got)
    assert [g["machine_rank"] for g in got] == [0, 1]
    for g in got:
        # torchrun sets the world's own values; the submitter's never arrive.
        assert g["shown"] == {"ACCELERATE_NUM_PROCESSES": None, "PET_NNODES": None, "WORLD_SIZE": "2",
                              "LOCAL_WORLD_SIZE": "1", "MASTER_PORT": str(json.loads(
                                  (tmp_path / "runs" / "stray" / "plan.json").read_text())["world"]["master_port"])}
    warning = [line for line in r.stderr.splitlines() if "not passed to the nodes" in line]
    assert len(warning) == 1 and all(name in warning[0] for name in STRAY)


@pytest.mark.slow
def test_node_process_env_delivers_the_planned_world(tmp_path):
    """The same check one level down: the plan's node commands started by hand with node_process_env, as a
    backend does, under the stray variables."""
    from launcher.environment import node_process_env
    from launcher.planning.model import from_dict
    out = tmp_path / "out"
    out.mkdir()
    args = ["--out", str(out)] + [w for name in STRAY for w in ("--show", name)]
    job = {"name": "stray", "entrypoint": {"script": PROBE}, "nodes": 2, "procs_per_node": 1, "args": args}
    cluster = {"name": "c", "backend": "local", "cpu_threads_per_process": 1}
    r = kit("submit", _write(tmp_path / "job.yaml", job), "--cluster", _write(tmp_path / "c.yaml", cluster),
            "--run-id", "by-hand", "--dry-run", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    plan = from_dict(json.loads(r.stdout))
    for rel, content in plan.files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    environ = {**os.environ, **STRAY}
    procs = [subprocess.Popen(["bash", "-c", node.command], cwd=tmp_path, env=node_process_env(plan, node, environ),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
             for node in plan.nodes]
    assert [p.wait(timeout=150) for p in procs] == [0, 0]
    got = reports(out)
    assert all(g["world_size"] == 2 and g["dist_world"] == 2 for g in got) and len(got) == 2
    assert all(g["shown"]["PET_NNODES"] is None and g["shown"]["ACCELERATE_NUM_PROCESSES"] is None for g in got)
    assert all(g["shown"]["WORLD_SIZE"] == "2" for g in got)
