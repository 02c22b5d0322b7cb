"""A record planted in a shared run root (issue 29): a record another user owns, or one anybody may write, is
listed as untrusted and never acted on (no login, no copy, no signal) unless the reader trusts its owner; the paths
a record names are confined to the record's own directory."""

import json
import os

import pytest

from tests.launcher.localrun import kit, write_job

NOBODY = 65534


def _slurm_record(root, name, workdir, run_dir, **extra):
    path = root / name
    path.mkdir(parents=True)
    (path / "status.json").write_text(json.dumps({
        "run_id": name, "backend": "slurm", "state": "running", "job_id": "4242", "workdir": str(workdir),
        "run_dir": run_dir, "nodes": [{"rank": 0, "host": "n1"}], "created_at": 1.0, **extra}))
    return path


@pytest.fixture
def secret(tmp_path):
    """Files of the reader's that a planted record would like copied where the planter can read them."""
    victim = tmp_path / "victim" / "private"
    victim.mkdir(parents=True)
    (victim / "node0.log").write_text("the reader's secret\n")
    return victim


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_another_users_record_is_listed_untrusted_and_never_acted_on(tmp_path, secret):
    root = tmp_path / "shared"
    planted = _slurm_record(root, "planted", secret.parent, "private")
    for p in (planted, planted / "status.json"):
        os.chown(p, NOBODY, NOBODY)
    r = kit("runs", "--run-root", str(root), cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if "planted" in ln)
    assert "untrusted" in row, r.stdout
    assert not (planted / "node0.log").exists()   # nothing copied into the planter's directory
    c = kit("cancel", "planted", "--run-root", str(root), cwd=tmp_path, timeout=60)
    assert c.returncode == 2 and "is not trusted" in c.stderr and "--trust-owner" in c.stderr, c.stderr
    assert "Traceback" not in c.stderr and len(c.stderr.strip().splitlines()) == 1


def test_a_record_writable_by_others_is_untrusted(tmp_path, secret):
    root = tmp_path / "shared"
    planted = _slurm_record(root, "loose", secret.parent, "private")
    os.chmod(planted / "status.json", 0o666)
    r = kit("status", "loose", "--run-root", str(root), cwd=tmp_path, timeout=60)
    assert "untrusted" in r.stdout + r.stderr and "writable by others" in r.stdout + r.stderr, r.stdout + r.stderr
    assert not (planted / "node0.log").exists()


def test_paths_a_record_names_are_confined_to_its_own_directory(tmp_path, secret):
    root = tmp_path / "mine"
    mine = _slurm_record(root, "pointing-away", secret.parent, "private")
    r = kit("logs", "pointing-away", "--run-root", str(root), cwd=tmp_path, timeout=60)
    assert "not itself" in r.stderr and "will not read or copy files from there" in r.stderr, r.stderr
    assert "the reader's secret" not in r.stdout
    assert not (mine / "node0.log").exists()


def _private(tmp_path):
    victim = tmp_path / "victim" / "private"
    victim.mkdir(parents=True)
    (victim / "key").write_text("the victim's secret\n")
    os.chmod(victim, 0o700)
    return victim


def _untouched(victim):
    assert oct(os.stat(victim).st_mode & 0o7777) == oct(0o700)
    assert sorted(os.listdir(victim)) == ["key"] and (victim / "key").read_text() == "the victim's secret\n"


def test_a_symbolic_link_planted_at_the_run_directory_is_refused(tmp_path):
    """A predictable run id in a shared run root: `runs/<id>` planted as a link to another user's private directory
    (issue 36). kit refuses in one line, exit 2; the directory keeps its mode and contents."""
    victim = _private(tmp_path)
    (tmp_path / "work" / "runs").mkdir(parents=True)
    os.symlink(victim, tmp_path / "work" / "runs" / "planted")
    job = write_job(tmp_path, nodes=1, args=["--out", str(tmp_path / "out")])
    r = kit("submit", job, "--set", "cluster.workdir=work", "--run-id", "planted", cwd=tmp_path, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    said = r.stderr.strip().splitlines()
    assert len(said) == 1 and "is a symbolic link" in said[0] and "Traceback" not in r.stderr, r.stderr
    _untouched(victim)
    assert os.path.islink(tmp_path / "work" / "runs" / "planted")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_another_users_directory_at_the_run_directory_is_refused_and_left_as_it_is(tmp_path):
    victim = _private(tmp_path / "work" / "runs")   # work/runs/victim/private: the run directory of run "private"
    os.rename(victim, tmp_path / "work" / "runs" / "private")
    victim = tmp_path / "work" / "runs" / "private"
    for p in (victim, victim / "key"):
        os.chown(p, NOBODY, NOBODY)
    job = write_job(tmp_path, nodes=1, args=["--out", str(tmp_path / "out")])
    r = kit("submit", job, "--set", "cluster.workdir=work", "--run-id", "private", cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and f"owned by uid {NOBODY}" in r.stderr, r.stdout + r.stderr
    _untouched(victim)


def test_a_symbolic_link_planted_at_a_file_of_the_record_is_refused(tmp_path):
    from launcher import records
    from launcher.errors import KitError
    from launcher.planning.build import build_plan
    from launcher.spec import ClusterSpec, JobSpec, Overrides

    job, cluster = JobSpec(name="j", entrypoint={"module": "m"}), ClusterSpec(name="c", backend="local", cpus=2)
    plan = build_plan(job, cluster, Overrides(), "mine")
    target = tmp_path / "elsewhere"
    target.write_text("kept\n")
    (tmp_path / "runs" / "mine").mkdir(parents=True)   # this user's own directory: used as it is
    os.symlink(target, tmp_path / "runs" / "mine" / ".status.lock")
    with pytest.raises(KitError, match="is a symbolic link"):
        records.create(str(tmp_path), plan, job, cluster)
    assert target.read_text() == "kept\n" and not (tmp_path / "runs" / "mine" / "status.json").exists()


def test_a_symbolic_link_planted_at_a_sweeps_directory_is_refused(tmp_path):
    from tests.sweeps.sweeprun import LOCAL_CLUSTER, probe_job

    victim = _private(tmp_path)
    (tmp_path / "runs").mkdir()
    os.symlink(victim, tmp_path / "runs" / "swept")
    job = probe_job(tmp_path, {"parameters": {"--x": [1]}})
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "swept", cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "is a symbolic link" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    _untouched(victim)
