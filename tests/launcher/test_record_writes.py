"""Writing a run record (issue 21): of processes creating one run id at once exactly one gets it; a disk that is
full when kit submits gives one line, exit 2, and leaves no temporary file behind."""

import multiprocessing
import os
import shutil
import subprocess
import sys

import pytest

from launcher import records
from launcher.errors import KitError
from launcher.planning.build import build_plan
from launcher.spec import ClusterSpec, JobSpec, Overrides
from tests.launcher.localrun import REPO, write_job


def _create(args):
    root, barrier = args
    job = JobSpec(name="race", entrypoint={"module": "m"})
    cluster = ClusterSpec(name="c", backend="local", cpus=2)
    plan = build_plan(job, cluster, Overrides(), "same-id")
    barrier.wait()
    try:
        records.create(root, plan, job, cluster)
        return "won"
    except KitError as e:
        return str(e)


@pytest.mark.slow
def test_exactly_one_of_many_processes_creates_a_run_id(tmp_path):
    ctx = multiprocessing.get_context("fork")
    for round_ in range(15):
        root = tmp_path / f"r{round_}"
        root.mkdir()
        with ctx.Manager() as manager:
            barrier = manager.Barrier(4)
            with ctx.Pool(4) as pool:
                said = pool.map(_create, [(str(root), barrier)] * 4)
        assert said.count("won") == 1, said
        assert all("already exists" in s for s in said if s != "won"), said
        assert records.RunRecord(str(root / "runs" / "same-id")).read_status().state == "starting"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root to mount a tmpfs")
def test_a_full_disk_at_submit_is_one_line_and_leaves_nothing(tmp_path):
    """The run root is a 16 KiB tmpfs, mounted in a mount namespace of the test's own (gone when it ends)."""
    job = write_job(tmp_path, args=["--out", str(tmp_path)])
    full = tmp_path / "full"
    full.mkdir()
    (tmp_path / "filler.py").write_text("f = open('full/filler', 'wb')\ntry:\n    f.write(b'x' * 65536)\n"
                                        "except OSError:\n    pass\n")
    script = (f"mount -t tmpfs -o size=16k tmpfs full && {sys.executable} filler.py && "
              f"{sys.executable} -m launcher submit {job} --set cluster.workdir=full --run-id full-disk; "
              f"echo rc=$?; ls -A full/runs 2>/dev/null; find full -name '*.tmp.*' -o -name '*.tmp' -o -name '*.new.*'")
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": REPO})
    assert "rc=2" in r.stdout, r.stdout + r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert err[-1].startswith("kit: error: cannot write the run record in ") and "No space left" in err[-1], err
    assert "Traceback" not in r.stderr
    lines = r.stdout.split("rc=2", 1)[1].split()
    assert lines == [], lines   # no run directory content and no temporary file
