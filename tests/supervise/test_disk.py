"""A failure with no words of its own under a full run directory disk says the disk is full (supervise/disk.py)."""

import os
from types import SimpleNamespace

from launcher.backends.base import Result
from launcher.records import RunRecord
from launcher.status import Failure
from launcher.supervise import disk


def _free(monkeypatch, free_bytes):
    monkeypatch.setattr(os, "statvfs", lambda path: SimpleNamespace(f_bavail=free_bytes // 4096, f_frsize=4096))


def test_a_bare_exit_on_a_full_disk_gets_the_disk_as_its_cause(tmp_path, monkeypatch):
    (tmp_path / "status.json").write_text('{"run_id": "r", "state": "failed"}')
    record = RunRecord(str(tmp_path))
    bare = Result(1, "failed", Failure(0, "localhost", None, 1, "exit code 1", ""))
    _free(monkeypatch, 0)
    explained = disk.with_disk_cause(bare, record)
    assert explained.failure.last_line.startswith(f"the disk of {tmp_path} is full (0 KiB free)")
    assert record.read_status().failure == explained.failure
    # Words of its own, or room on the disk: left as they are.
    worded = Result(1, "failed", Failure(0, "localhost", 0, 1, "exit code 1", "ValueError: bad"))
    assert disk.with_disk_cause(worded, record) is worded
    _free(monkeypatch, 10 * 1024 * 1024)
    assert disk.with_disk_cause(bare, record) is bare
    assert disk.with_disk_cause(Result(0, "succeeded"), record).failure is None
