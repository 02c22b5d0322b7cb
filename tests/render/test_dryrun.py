"""`kit submit --dry-run`: prints the plan, masks secrets, writes and starts nothing."""

import json
import os
import subprocess
import sys

from tests.launcher.localrun import REPO

SLURM = os.path.join(REPO, "cluster_configs", "slurm.example.yaml")
SSH = os.path.join(REPO, "cluster_configs", "ssh.example.yaml")
JOB = os.path.join(REPO, "jobs", "bert_cls.yaml")


def kit(*argv, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "launcher", *argv], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60)


def test_text_dry_run_shows_node_0_the_rule_for_the_others_and_every_file(tmp_path):
    r = kit("submit", JOB, "--cluster", SLURM, "--nodes", "2", "--gpus", "8", "--dry-run", "--run-id", "r1",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "node 0  host slurm-node-0" in r.stdout and "node 1: the same as node 0" in r.stdout
    assert "<host> of node i is the i-th of (from node 0): slurm-node-[0-1]" in r.stdout
    assert "--- file runs/r1/job.sbatch" in r.stdout and "--- file runs/r1/accelerate.yaml" in r.stdout
    assert "world: 2 node(s) x 8 process(es) = 16" in r.stdout
    assert os.listdir(tmp_path) == []


def test_json_dry_run_has_the_plan(tmp_path):
    r = kit("submit", JOB, "--cluster", SSH, "--strategy", "fsdp", "--dry-run", "--format", "json",
            "--run-id", "r2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["backend"] == "ssh"
    node = plan["nodes"][0]
    assert {"host", "machine_rank", "argv", "env"} <= node.keys()
    assert "--use_fsdp" in node["argv"]
    assert "fsdp_config" in plan["files"]["runs/r2/accelerate.node0.yaml"]
    assert os.listdir(tmp_path) == []


def test_cli_path_imports_nothing_heavy(tmp_path):
    code = (
        "import sys; from launcher.cli import main; "
        f"rc = main(['submit', {JOB!r}, '--cluster', {SLURM!r}, '--dry-run']); "
        "heavy = [m for m in ('torch', 'transformers', 'deepspeed', 'accelerate') if m in sys.modules]; "
        "print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "HEAVY []" in r.stderr
