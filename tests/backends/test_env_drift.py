"""Environment drift caught before training (issue 31 item 1), on the harness's hosts: a node whose accelerate says
another version (its dist-info's METADATA, in that host's mount namespace) or whose copy of the script differs stops
the run before it trains, exit 2, with a table naming the item and both values; on SSH in the checks (nothing
started, no record), on SLURM in each task before its launcher (the job fails with the table as its cause);
`env_check: warn` trains with the table said (on both)."""

import json
import os
from pathlib import Path

from tests.backends import slurmrun
from tests.backends.drift import metadata_path, seen_on, with_version
from tests.backends.sshrun import cluster, leftovers, workdir
from tests.launcher.localrun import PROBE, kit, reports, write_job


def _table_row(text: str, item: str) -> list:
    """The table's row of `item` (a node's tag taken off), as words."""
    lines = [ln.split("] ", 1)[1] if ln.startswith("[node") else ln for ln in text.splitlines()]
    rows = [ln.split() for ln in lines if ln.strip().startswith(item + " ")]
    assert rows, text
    return rows[0]


def test_ssh_a_node_with_another_accelerate_stops_the_run_before_it_starts(ssh_hosts, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    with seen_on(ssh_hosts.hosts[1], metadata_path("accelerate"), with_version("accelerate", "1.15.0")):
        r = kit("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "drift-acc",
                cwd=workdir(ssh_hosts))
    assert r.returncode == 2, r.stderr
    import accelerate
    assert _table_row(r.stderr, "accelerate") == ["accelerate", accelerate.__version__, "1.15.0"], r.stderr
    assert "environment  node 0 (n1)  node 1 (n2)" in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("kit: error: environment drift between nodes: accelerate ") and "nothing was started" in last
    assert reports(out) == [] and not os.path.exists(os.path.join(workdir(ssh_hosts), "runs", "drift-acc"))
    assert leftovers(ssh_hosts, "drift-acc") == {}


def test_ssh_a_node_whose_script_differs_stops_the_run_and_warn_trains(ssh_hosts, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    changed = open(PROBE).read() + "\n# this host's copy was edited\n"
    cfg = cluster(ssh_hosts, tmp_path)
    with seen_on(ssh_hosts.hosts[1], PROBE, changed):
        strict = kit("submit", job, "--cluster", cfg, "--run-id", "drift-code", cwd=workdir(ssh_hosts))
        warn = kit("submit", job, "--cluster", cfg, "--run-id", "drift-warn", "--set", "env_check=warn",
                   cwd=workdir(ssh_hosts), timeout=120)
    assert strict.returncode == 2, strict.stderr
    row = _table_row(strict.stderr, "code")
    assert len(row) == 3 and row[1] != row[2], strict.stderr
    assert "(env_check: warn, training anyway)" in warn.stderr and _table_row(warn.stderr, "code") == row
    assert warn.returncode == 0, warn.stderr + warn.stdout
    assert sorted(g["rank"] for g in reports(out)) == [0, 1]


def test_slurm_a_task_with_another_accelerate_fails_the_job_before_training(slurm_cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    n2 = slurm_cluster.bed.hosts[1]
    with seen_on(n2, metadata_path("accelerate"), with_version("accelerate", "1.15.0")):
        r = kit("submit", job, "--cluster", slurmrun.cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
                "--run-id", "slurm-drift", cwd=slurmrun.workdir(slurm_cluster), timeout=240)
    assert r.returncode == 2, r.stdout + r.stderr
    import accelerate
    assert "[node0]   environment  node 0 (n1)  node 1 (n2)" in r.stdout, r.stdout   # said by node 0's task
    assert _table_row(r.stdout, "accelerate") == ["accelerate", accelerate.__version__, "1.15.0"], r.stdout
    cause = f"environment drift between nodes: accelerate {accelerate.__version__} on node 0 (n1), 1.15.0 on node 1 (n2)"
    assert cause in r.stderr.splitlines()[-1], r.stderr
    assert reports(out) == []   # no rank started
    status = slurmrun.status_of(slurm_cluster, "slurm-drift")
    assert status["state"] == "failed" and status["exit_code"] == 2 and cause in status["failure"]["last_line"]
    shown = kit("status", "slurm-drift", cwd=slurmrun.workdir(slurm_cluster))
    assert cause in shown.stdout, shown.stdout
    run_dir = Path(slurmrun.workdir(slurm_cluster), "runs", "slurm-drift")
    [node1] = run_dir.glob("env.*-0.node1.*.json")   # env.<job id>-<requeue count>.node<N>.<fingerprint hash>.json
    assert json.loads(node1.read_text())["env"]["accelerate"] == "1.15.0"


def test_slurm_a_task_whose_script_differs_fails_the_job_and_warn_trains(slurm_cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    changed = open(PROBE).read() + "\n# this node's copy was edited\n"
    cfg = slurmrun.cluster_file(slurm_cluster, tmp_path)
    with seen_on(slurm_cluster.bed.hosts[1], PROBE, changed):
        strict = kit("submit", job, "--cluster", cfg, "--gpus", "0", "--run-id", "slurm-code",
                     cwd=slurmrun.workdir(slurm_cluster), timeout=240)
        assert reports(out) == []   # no rank started
        warn = kit("submit", job, "--cluster", cfg, "--gpus", "0", "--run-id", "slurm-warn", "--set",
                   "env_check=warn", cwd=slurmrun.workdir(slurm_cluster), timeout=240)
    assert strict.returncode == 2, strict.stdout + strict.stderr
    row = _table_row(strict.stdout, "code")
    assert len(row) == 3 and row[1] != row[2], strict.stdout
    assert "environment drift between nodes: code " in strict.stderr.splitlines()[-1], strict.stderr
    assert slurmrun.status_of(slurm_cluster, "slurm-code")["exit_code"] == 2
    assert "(env_check: warn, training anyway)" in warn.stdout and _table_row(warn.stdout, "code") == row
    assert warn.returncode == 0, warn.stdout + warn.stderr
    assert sorted(g["rank"] for g in reports(out)) == [0, 1]


def test_ssh_doctor_shows_the_same_table(ssh_hosts, tmp_path):
    job = write_job(tmp_path, args=["--out", str(tmp_path)])
    cfg = cluster(ssh_hosts, tmp_path)
    same = kit("doctor", "--cluster", cfg, "--job", job, "--format", "json", cwd=workdir(ssh_hosts), timeout=120)
    checks = {(c["host"], c["check"]): c["verdict"] for c in json.loads(same.stdout)["checks"]}
    assert checks[("n1", "environment")] == checks[("n2", "environment")] == "PASS", same.stdout
    with seen_on(ssh_hosts.hosts[1], metadata_path("accelerate"), with_version("accelerate", "1.15.0")):
        r = kit("doctor", "--cluster", cfg, "--job", job, cwd=workdir(ssh_hosts), timeout=120)
    assert r.returncode == 1, r.stdout
    import accelerate
    assert "the hosts' environments differ (a run with env_check: strict stops before training):" in r.stdout
    assert "  environment  n1      n2" in r.stdout.splitlines(), r.stdout
    assert _table_row(r.stdout, "accelerate") == ["accelerate", accelerate.__version__, "1.15.0"], r.stdout


def test_slurm_doctor_shows_the_same_table(slurm_cluster, tmp_path):
    job = write_job(tmp_path, args=["--out", str(tmp_path)])
    cfg = slurmrun.cluster_file(slurm_cluster, tmp_path)
    with seen_on(slurm_cluster.bed.hosts[1], metadata_path("accelerate"), with_version("accelerate", "1.15.0")):
        r = kit("doctor", "--cluster", cfg, "--job", job, cwd=slurmrun.workdir(slurm_cluster), timeout=240)
    assert r.returncode == 1, r.stdout + r.stderr
    import accelerate
    assert "  environment  n1      n2" in r.stdout.splitlines(), r.stdout
    assert _table_row(r.stdout, "accelerate") == ["accelerate", accelerate.__version__, "1.15.0"], r.stdout
    good = kit("doctor", "--cluster", cfg, "--job", job, cwd=slurmrun.workdir(slurm_cluster), timeout=240)
    assert good.returncode == 0 and "n2     environment     PASS" in good.stdout, good.stdout
