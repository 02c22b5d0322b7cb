"""SLURM records tell the truth (issue 21): a sweep re-run while its array still waits in the queue is refused (its
trials would run twice), a set-aside attempt's record writes only itself, a detached array's sweep records its end
(and `kit cancel` leaves a finished sweep as it is), and a job the controller has forgotten on a cluster without
accounting ends by the exit files the nodes wrote, with no raw sacct errors on the console."""

import json
import os
import stat
import time

import yaml

from tests.backends.slurmrun import cluster_file, kit, status_of, wait_for, workdir, write_job
from tests.sweeps.sweeprun import probe_job


def _block(slurm_cluster) -> str:
    """A job holding every node of the partition, so that what is submitted next waits in the queue."""
    r = slurm_cluster.run(["sbatch", "--parsable", f"--partition={slurm_cluster.partition}", "--nodes=2",
                           "--exclusive", "--wrap", "sleep 600"])
    job = r.stdout.strip().split(";")[0]
    assert wait_for(lambda: slurm_cluster.run(["squeue", "-h", "-j", job, "-o", "%T"]).stdout.strip() == "RUNNING",
                    timeout=60)
    return job


def _sweep_json(here, sweep_id) -> dict:
    with open(os.path.join(here, "runs", sweep_id, "sweep.json")) as f:
        return json.load(f)


def test_a_queued_sweep_is_not_run_twice_and_a_set_aside_attempt_writes_only_itself(slurm_cluster, tmp_path):
    here = workdir(slurm_cluster)
    job = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 2]}}, name="queued")
    cluster = cluster_file(slurm_cluster, tmp_path)
    blocker = _block(slurm_cluster)
    try:
        first = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "ssw-q", "--detach", cwd=here)
        assert first.returncode == 0, first.stderr
        array = _sweep_json(here, "ssw-q")["array_job_id"]
        again = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "ssw-q", "--detach", cwd=here)
        assert again.returncode == 2, again.stderr
        assert "trial ssw-q-t0 is still pending" in again.stderr and "kit cancel ssw-q" in again.stderr
        assert _sweep_json(here, "ssw-q")["array_job_id"] == array   # nothing was submitted again
        # Cancelled while queued, then run again: the old records are set aside, the new array waits.
        cancel = kit("cancel", "ssw-q", cwd=here, timeout=200)
        assert cancel.returncode == 0 and "cancelled" in cancel.stdout, cancel.stdout + cancel.stderr
        rerun = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "ssw-q", "--detach", cwd=here)
        assert rerun.returncode == 0 and "ssw-q-t0.attempt1" in rerun.stderr, rerun.stderr
        new = status_of(slurm_cluster, "ssw-q-t0")
        before = open(os.path.join(here, "runs", "ssw-q-t0", "status.json")).read()
        old = kit("status", "ssw-q-t0.attempt1", cwd=here)
        assert "state cancelled" in old.stdout, old.stdout + old.stderr
        assert open(os.path.join(here, "runs", "ssw-q-t0", "status.json")).read() == before
        assert new["state"] == "pending" and new["handle"]["job_id"] != f"{array}_0"
    finally:
        slurm_cluster.run(["scancel", blocker], check=False)
        kit("cancel", "ssw-q", cwd=here, timeout=200)


def test_a_detached_array_records_its_end_and_cancel_leaves_it(slurm_cluster, tmp_path):
    here = workdir(slurm_cluster)
    job = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 3]}}, name="ended")
    r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id", "ssw-e",
            "--detach", cwd=here)
    assert r.returncode == 0, r.stderr
    array = _sweep_json(here, "ssw-e")["array_job_id"]
    # Nobody follows it: wait on SLURM itself until the array is out of the queue.
    assert wait_for(lambda: not slurm_cluster.run(["squeue", "-h", "-j", array]).stdout.strip(), timeout=180)
    assert _sweep_json(here, "ssw-e")["state"] == "running"   # nothing has read it yet
    status = kit("sweep", "status", "ssw-e", cwd=here)
    assert "state succeeded" in status.stdout, status.stdout
    data = _sweep_json(here, "ssw-e")
    assert data["state"] == "succeeded" and data["exit_code"] == 0 and data["finished_at"]
    cancel = kit("cancel", "ssw-e", cwd=here)
    assert cancel.returncode == 0 and "nothing to cancel" in cancel.stdout, cancel.stdout
    assert _sweep_json(here, "ssw-e")["state"] == "succeeded"


def _no_accounting(tmp_path) -> dict:
    """An environment whose sacct fails as on a cluster without accounting and whose scontrol has forgotten every
    job (past MinJobAge), as the real commands say it; other scontrol calls go to the real one."""
    shims = tmp_path / "shims"
    shims.mkdir()
    real = {}
    for name in ("scontrol", "sacct"):
        real[name] = next(os.path.join(d, name) for d in os.environ["PATH"].split(":")
                          if os.access(os.path.join(d, name), os.X_OK))
    (shims / "sacct").write_text("#!/bin/sh\necho 'sacct: error: Problem talking to the database: "
                                 "accounting storage is disabled' >&2\nexit 1\n")
    (shims / "scontrol").write_text(
        "#!/bin/sh\nif [ \"$1 $2\" = \"show job\" ]; then echo 'slurm_load_jobs error: Invalid job id specified' >&2; "
        f"exit 1; fi\nexec {real['scontrol']} \"$@\"\n")
    for shim in shims.iterdir():
        shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"}


def test_without_accounting_a_forgotten_job_ends_by_its_exit_files(slurm_cluster, tmp_path):
    here = workdir(slurm_cluster)
    out = tmp_path / "out"
    out.mkdir()
    cluster = cluster_file(slurm_cluster, tmp_path)
    ok = write_job(tmp_path, name="acct-ok", nodes=2, args=["--out", str(out)])
    bad = write_job(tmp_path, name="acct-bad", nodes=2, args=["--out", str(out), "--fail-rank", "1",
                                                               "--fail-code", "4"])
    for job, run_id in ((ok, "noacct-ok"), (bad, "noacct-bad")):
        r = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", run_id, "--detach", cwd=here)
        assert r.returncode == 0, r.stderr
    for run_id in ("noacct-ok", "noacct-bad"):
        job_id = status_of(slurm_cluster, run_id)["handle"]["job_id"]
        assert wait_for(lambda: not slurm_cluster.run(["squeue", "-h", "-j", job_id]).stdout.strip(), timeout=180)
        assert status_of(slurm_cluster, run_id)["state"] == "pending"   # nobody followed it
    env = _no_accounting(tmp_path)
    started = time.monotonic()
    s = kit("status", "noacct-ok", cwd=here, env=env)
    assert "state succeeded" in s.stdout and "exit code 0" in s.stdout, s.stdout + s.stderr
    assert "no accounting" in s.stdout and "sacct: error" not in s.stdout + s.stderr
    b = kit("status", "noacct-bad", cwd=here, env=env)
    assert "state failed" in b.stdout and "exit code 4" in b.stdout, b.stdout + b.stderr
    follow = kit("logs", "noacct-ok", "--follow", cwd=here, env=env, timeout=60)
    assert follow.returncode == 0 and "sacct: error" not in follow.stdout + follow.stderr
    cancel = kit("cancel", "noacct-bad", cwd=here, env=env, timeout=60)
    assert "already finished (failed, exit code 4)" in cancel.stdout, cancel.stdout
    assert time.monotonic() - started < 60
    st = yaml.safe_load(open(os.path.join(here, "runs", "noacct-ok", "status.json")))
    assert st["state"] == "succeeded" and st["node_exit_codes"] == [0, 0]


def test_a_failure_verdict_holds_while_other_shells_read_the_run(slurm_cluster, tmp_path):
    """Issue 29, finding 1: kit's follower ends a hung job (failed, 124: it cancels the job) while `kit status`
    runs in three other shells the whole time; each of those sees SLURM's CANCELLED and would write `cancelled,
    143`. The follower's verdict stands, and every refused writer is in the record's history, not its state."""
    import subprocess
    import sys
    here = workdir(slurm_cluster)
    job = write_job(tmp_path, nodes=2, args=["--out", str(tmp_path), "--hang-rank", "1"], timeouts={"hang": 10})
    submit = subprocess.Popen([sys.executable, "-m", "launcher", "submit", job, "--cluster",
                               cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id", "slurm-race"],
                              cwd=here, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    readers = [subprocess.Popen([sys.executable, "-c", (
        "import os, subprocess, sys, time\n"
        "end = time.monotonic() + 240\n"
        "while time.monotonic() < end and not os.path.exists('done'):\n"
        f"    subprocess.run([sys.executable, '-m', 'launcher', 'status', 'slurm-race'], cwd={here!r},\n"
        "                   capture_output=True)\n")], cwd=tmp_path) for _ in range(3)]
    try:
        _, err = submit.communicate(timeout=300)
    finally:
        (tmp_path / "done").write_text("yes")
        for reader in readers:
            reader.wait(timeout=120)
    assert submit.returncode == 124, err[-3000:]
    for _ in range(3):   # the readers' last looks, and a few more, after the end
        kit("status", "slurm-race", cwd=here)
    st = status_of(slurm_cluster, "slurm-race")
    assert (st["state"], st["exit_code"]) == ("failed", 124), st
    assert st["failure"]["meaning"] == "hung", st["failure"]
    assert all(h["kept"] == "failed" for h in st.get("history", [])), st["history"]
