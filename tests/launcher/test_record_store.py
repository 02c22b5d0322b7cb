"""The record store (issue 29): every write of a run's status is a read-modify-write under the record's lock,
moves the state only as states.py allows (a verdict is never replaced; a writer that disagrees is kept in the
history), is atomic (a reader never sees half a file; no temporary file is left), and a full disk keeps the last
good record."""

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time

import pytest

from launcher.records import RunRecord
from launcher.states import BadTransition
from launcher.status import Failure
from tests.launcher.localrun import REPO

VERDICTS = {"failed": 124, "cancelled": 143, "succeeded": 0}


def _record(path) -> RunRecord:
    path.mkdir(parents=True)
    (path / "status.json").write_text(json.dumps({"run_id": "r", "backend": "slurm", "state": "running"}))
    return RunRecord(str(path))


def _writer(args):
    path, role, start = args
    record = RunRecord(path)
    while time.time() < start:
        time.sleep(0.001)
    if role in VERDICTS:
        code = VERDICTS[role]
        failure = Failure(0, "n1", None, code, role, f"said by the {role} writer") if code else None
        record.update_status(state=role, exit_code=code, failure=failure, finished_at=time.time())
    else:   # a reader that writes what it learns, many times (kit status on a running run)
        for i in range(30):
            record.update_status(note=f"note {i}", slurm_state="RUNNING")
    return role


@pytest.mark.slow
def test_racing_writers_never_lose_or_mix_a_verdict(tmp_path):
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        for round_ in range(20):
            record = _record(tmp_path / f"r{round_}")
            start = time.time() + 0.2
            pool.map(_writer, [(record.path, role, start) for role in [*VERDICTS, "noter"]])
            status = record.read_status()
            # One verdict, whole: its state with its own exit code and failure, never another writer's.
            assert status.state in VERDICTS and status.exit_code == VERDICTS[status.state], status
            assert (status.failure is None) == (status.state == "succeeded")
            assert status.failure is None or status.failure.meaning == status.state
            # The two that came later are in the history, each saying which verdict was kept.
            refused = sorted(h["state"] for h in status.history)
            assert refused == sorted(set(VERDICTS) - {status.state}), status.history
            assert all(h["kept"] == status.state and h["pid"] for h in status.history)
            # Nothing of the other writer was lost.
            assert status.note == "note 29" and status.handle.slurm_state == "RUNNING"
            assert sorted(os.listdir(record.path)) == [".status.lock", "status.json"]


def test_a_restart_reopens_an_ended_run_and_nothing_else_does(tmp_path):
    record = _record(tmp_path / "r")
    record.update_status(state="failed", exit_code=137)
    record.update_status(state="running")
    assert record.read_status().state == "failed"
    record.update_status(reopen=True, state="starting", exit_code=None)
    assert (record.read_status().state, record.read_status().exit_code) == ("starting", None)
    with pytest.raises(BadTransition):
        record.update_status(state="finished")   # no such state: a bug, said at once


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root to mount a tmpfs")
def test_a_full_disk_keeps_the_last_good_record(tmp_path):
    """The record lives on a 128 KiB tmpfs of the test's own mount namespace: its reserve lets the verdict in once
    the disk is full; after that, a write is a warning and the last good status stays, whole."""
    (tmp_path / "disk").mkdir()
    script = f"""
import json, os, sys
sys.path.insert(0, {REPO!r})
from launcher import records
from launcher.records import RunRecord
os.makedirs("disk/r")
with open("disk/r/status.json", "w") as f:
    json.dump({{"run_id": "r", "backend": "local", "state": "running"}}, f)
from launcher.filestore import reserve_room
reserve_room("disk/r/" + records.RESERVE)
with open("disk/fill", "wb", buffering=0) as f:
    try:
        while True:
            f.write(b"x" * 1024)
    except OSError:
        pass
r = RunRecord(os.path.abspath("disk/r"))
r.update_status(state="failed", exit_code=7, note="the verdict, written from the reserve")
print("after verdict", json.load(open("disk/r/status.json"))["state"])
r.update_status(note="x" * 200000)
print("after big", json.load(open("disk/r/status.json"))["note"][:10])
print("left", sorted(os.listdir("disk/r")))
"""
    (tmp_path / "go.py").write_text(script)
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        f"mount -t tmpfs -o size=128k tmpfs disk && {sys.executable} go.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "after verdict failed" in r.stdout
    assert "after big the verdic" in r.stdout   # the last good status, whole
    assert "left ['.status.lock', 'status.json']" in r.stdout   # the reserve spent, no temporary file
    warnings = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "keeps its last good state" in warnings[0], r.stderr
