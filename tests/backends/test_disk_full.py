"""A full disk under the run record never stalls a run (issue 20): the node output keeps draining (lines that
cannot be written are dropped with one warning), the outcome is recorded if at all possible, no temporary file is
left, and nothing is a traceback. The record's disk is a small tmpfs in a mount namespace of the test's own."""

import os
import subprocess
import sys

import pytest

from tests.backends.sshrun import cluster
from tests.launcher.localrun import REPO, write_job


def run_on_small_disk(tmp_path, kit_args, size="192k", timeout=240):
    """kit (from the repo) with ./full a tmpfs of `size`; returns (rc, stdout, stderr, what is left in ./full)."""
    full = tmp_path / "full"
    full.mkdir(exist_ok=True)
    argv = " ".join(f"'{a}'" for a in kit_args)
    script = (f"mount -t tmpfs -o size={size} tmpfs full && cd full && "
              f"{sys.executable} -m launcher {argv}; echo \"rc=$?\" >&2; "
              f"find . -name '*.tmp.*' -o -name '*.new.*' -o -name '*.kit-tmp-*' | sed 's/^/LEFT /' >&2; "
              f"cat runs/*/status.json 2>/dev/null | tr -d '\\n' | sed 's/^/STATUS /' >&2")
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], cwd=tmp_path,
                       capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": REPO})
    rc = int(r.stderr.rsplit("rc=", 1)[1].split()[0])
    return rc, r.stdout, r.stderr


def test_an_ssh_run_whose_record_disk_fills_goes_on(ssh_hosts, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    # Each rank writes 3 MB of output lines: the node logs here cannot hold them, the hosts' disks are fine.
    job = write_job(tmp_path, args=["--out", str(out), "--flood", "3000000", "--linger", "1"])
    rc, stdout, stderr = run_on_small_disk(tmp_path, ["submit", job, "--cluster", cluster(ssh_hosts, tmp_path),
                                                      "--run-id", "ssh-full"])
    assert rc == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "LEFT " not in stderr, stderr[-3000:]
    assert stderr.count("kit: warning: node log") <= 2 and "No space left on device" in stderr, stderr[-3000:]
    assert "probe rank 0 flooded" in stdout and "probe rank 1 flooded" in stdout   # drained to the end
    assert "kit: run ssh-full succeeded" in stderr
    assert '"state": "succeeded"' in stderr.split("STATUS ", 1)[1]


@pytest.mark.slow
def test_a_local_run_whose_disk_fills_ends_with_one_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--flood", "3000000"])
    rc, stdout, stderr = run_on_small_disk(tmp_path, ["submit", job, "--run-id", "local-full", "--set",
                                                      "cluster.cpu_threads_per_process=1"])
    # The ranks' own output files share the full disk (torchrun tees into the run directory): the job may
    # fail there. kit itself ends, says why in one line, records the end and leaves no temporary file.
    assert "Traceback (most recent call last)" not in "\n".join(
        ln for ln in stderr.splitlines() if not ln.startswith("[node")), stderr[-3000:]
    assert "LEFT " not in stderr, stderr[-3000:]
    last = [ln for ln in stderr.splitlines() if ln.startswith("kit: run local-full")]
    assert last and ("succeeded" in last[-1] or "failed" in last[-1]), stderr[-3000:]
    if "failed" in last[-1]:   # the why, not a bare "exited 1"
        assert "/full/runs/local-full is full (" in last[-1] or "No space left" in last[-1], last[-1]
    status = stderr.split("STATUS ", 1)[1]
    assert '"state": "succeeded"' in status or '"state": "failed"' in status, status[:500]
