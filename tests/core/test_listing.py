"""`kit runs` from the index's entries (core/listing.py, run_index.py): a run's end updates its entry, a listing
reads no full record of a run that is over, a stale or missing entry is read again and written back, a page at a
time (--limit, --all), filters that see through stale entries, other owners' records untrusted, and writers in
several processes at once that lose no entry. Records are made by kit's own writers; KIT_HOME is each test's own."""

import argparse
import contextlib
import dataclasses
import io
import json
import multiprocessing
import os
import time

import pytest

from launcher import records, run_index
from launcher.commands.runs import runs_cmd
from launcher.filestore import write_atomic
from launcher.supervise import tree
from tests.launcher.localrun import kit
from tests.launcher.planning import LOCAL_CPU, cluster, job, plan


def _run(root, run_id: str, created: float, end=("succeeded", 0)) -> records.RunRecord:
    """A run's record written as a launch writes it: created, indexed, running under this process, ended."""
    p = dataclasses.replace(plan(job(), cluster(LOCAL_CPU)), run_id=run_id, run_dir=run_id)
    record = records.create(str(root), p, job(), cluster(LOCAL_CPU))
    record.update_status(created_at=created, supervisor_pid=os.getpid(),
                         supervisor_start=tree.started_at(os.getpid()))
    run_index.remember(record.path)
    record.update_status(state="running", started_at=created + 1)
    if end is not None:
        record.end_attempt(state=end[0], exit_code=end[1], finished_at=created + 61)
    return record


def _entries() -> dict:
    return run_index.entries()


def _listed(cwd, *words) -> list[list[str]]:
    r = kit("runs", *words, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return [line.split() for line in r.stdout.splitlines()]


def test_a_runs_end_updates_its_entry_and_the_listing_reads_no_record_that_is_over(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    record = _run(root, "goes-on", time.time() - 100, end=None)
    assert _entries()[record.path]["state"] == "running"
    record.end_attempt(state="failed", exit_code=3, finished_at=time.time())
    entry = _entries()[record.path]   # written by the writer, under the record's lock
    assert (entry["state"], entry["exit"], entry["id"], entry["owner"]) == ("failed", 3, "goes-on", os.geteuid())
    assert entry["sig"] == records.signature(os.stat(record.file(records.STATUS)))
    for i in range(3):
        _run(root, f"done-{i}", time.time() - 50 + i)
    read = []
    real = records.RunRecord.read_status
    monkeypatch.setattr(records.RunRecord, "read_status", lambda self, *a, **k: read.append(self.path) or
                        real(self, *a, **k))
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    args = argparse.Namespace(run_root=None, state=None, backend=None, since=None, limit=None, all=True)
    with contextlib.redirect_stdout(out):
        assert runs_cmd(args) == 0
    rows = [line.split() for line in out.getvalue().splitlines()[1:]]
    assert [r[:4] for r in rows] == [["done-2", "local", "succeeded", "0"], ["done-1", "local", "succeeded", "0"],
                                     ["done-0", "local", "succeeded", "0"], ["goes-on", "local", "failed", "3"]]
    assert read == []


def test_a_stale_entry_is_read_again_and_repaired(tmp_path):
    root = tmp_path / "runs"
    record = _run(root, "behind", time.time() - 100)
    # Another writer (an older kit, or one killed between its two writes) changed the record, not the entry.
    data = json.loads(open(record.file(records.STATUS)).read())
    write_atomic(record.file(records.STATUS), json.dumps({**data, "state": "cancelled", "exit_code": 130}))
    assert _entries()[record.path]["state"] == "succeeded"
    assert _listed(tmp_path)[1][:4] == ["behind", "local", "cancelled", "130"]
    entry = _entries()[record.path]
    assert (entry["state"], entry["exit"]) == ("cancelled", 130)
    assert entry["sig"] == records.signature(os.stat(record.file(records.STATUS)))
    # A filter sees through a stale entry too.
    write_atomic(record.file(records.STATUS), json.dumps({**data, "state": "timeout", "exit_code": 124}))
    assert [r[0] for r in _listed(tmp_path, "--state", "timeout")[1:]] == ["behind"]


def test_missing_entries_are_rebuilt_from_the_records_and_a_deleted_record_is_not_listed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    made = [_run(tmp_path / "a" / "runs", f"r{i}", time.time() - 100 + i) for i in range(4)]
    os.unlink(os.path.join(run_index.kit_home(), run_index.INDEX, run_index.ENTRIES))   # an index from an older kit
    assert [r[0] for r in _listed(elsewhere)[1:]] == ["r3", "r2", "r1", "r0"]
    assert {m.path for m in made} <= set(_entries())
    import shutil
    shutil.rmtree(made[3].path)
    assert [r[0] for r in _listed(elsewhere)[1:]] == ["r2", "r1", "r0"]
    assert kit("status", "r3", cwd=elsewhere).returncode == 2


def test_runs_are_listed_a_page_at_a_time(tmp_path):
    now = time.time()
    for i in range(55):
        _run(tmp_path / ("runs" if i % 2 else "other/runs"), f"p{i:02d}", now - 1000 + i,
             end=("failed", 1) if i % 5 == 0 else ("succeeded", 0))
    page = _listed(tmp_path)
    assert [r[0] for r in page[1:51]] == [f"p{i:02d}" for i in range(54, 4, -1)]
    assert " ".join(page[51]) == "(the newest 50 of 55; `kit runs --all` for every one, --limit N for the newest N)"
    assert len(page) == 52
    assert [r[0] for r in _listed(tmp_path, "--limit", "3")[1:4]] == ["p54", "p53", "p52"]
    every = _listed(tmp_path, "--all")
    assert [r[0] for r in every[1:]] == [f"p{i:02d}" for i in range(54, -1, -1)]
    failed = _listed(tmp_path, "--state", "failed", "--limit", "2")
    assert [r[0] for r in failed[1:3]] == ["p50", "p45"] and "newest 2 of 11 that match" in " ".join(failed[3])
    assert _listed(tmp_path, "--backend", "slurm") == [["no", "runs", "match"]]
    assert len(_listed(tmp_path, "--since", "2999-01-01")) == 1
    assert [r[0] for r in _listed(tmp_path, "--run-root", "other/runs", "--all")[1:3]] == ["p54", "p52"]
    bad = kit("runs", "--limit", "0", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--limit 0:" in bad.stderr
    # `kit status` with no id: the newest run, found from the entries.
    assert "run p54 " in kit("status", cwd=tmp_path / "other").stdout


def test_a_record_of_another_owner_is_listed_untrusted_whatever_its_entry_says(tmp_path):
    record = _run(tmp_path / "runs", "theirs", time.time())
    for path in (record.file(records.STATUS), record.path):
        os.chown(path, 65534, 65534)
    assert _listed(tmp_path)[1][:3] == ["theirs", "local", "untrusted"]


def _writer(home: str, root: str, who: int, count: int) -> None:
    os.environ["KIT_HOME"] = home
    for i in range(count):
        record = _run(root, f"w{who}-{i}", time.time(), end=None)
        record.update_status(note="progress")
        record.end_attempt(state="failed" if i % 2 else "succeeded", exit_code=i % 2, finished_at=time.time())


def test_concurrent_writers_lose_no_entry_while_the_entries_are_rewritten(tmp_path, monkeypatch):
    monkeypatch.setattr(run_index, "_SLACK", 0)   # every read of the entries rewrites them
    home, root = os.environ["KIT_HOME"], str(tmp_path / "runs")
    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_writer, args=(home, root, w, 15)) for w in range(4)]
    for w in writers:
        w.start()
    rewrites = 0
    while any(w.is_alive() for w in writers):
        _entries()
        rewrites += 1
    for w in writers:
        w.join()
        assert w.exitcode == 0
    entries = _entries()
    assert rewrites > 1
    for w in range(4):
        for i in range(15):
            entry = entries[os.path.join(root, f"w{w}-{i}")]
            assert (entry["state"], entry["exit"]) == (("failed", 1) if i % 2 else ("succeeded", 0))
            assert entry["sig"] == records.signature(os.stat(os.path.join(root, f"w{w}-{i}", records.STATUS)))
    path = os.path.join(run_index.kit_home(), run_index.INDEX, run_index.ENTRIES)
    run_index._compact(path, {}, ())   # nothing read yet: the file as it is
    assert len(open(path).read().splitlines()) == 60 and _entries() == entries   # one line per record


@pytest.mark.parametrize("what", ["run", "sweep"])
def test_an_entry_names_its_kind(tmp_path, what):
    from launcher.core import listing
    if what == "run":
        assert listing.read_entry(_run(tmp_path / "runs", "k", time.time()).path)["kind"] == "run"
    else:
        d = tmp_path / "runs" / "sw"
        d.mkdir(parents=True)
        (d / records.SWEEP_FILE).write_text(json.dumps({"trials": [], "state": "succeeded", "created_at": 5.0}))
        entry = listing.read_entry(str(d))
        assert (entry["kind"], entry["backend"], entry["state"], entry["created"]) == ("sweep", "sweep", "succeeded",
                                                                                      5.0)
