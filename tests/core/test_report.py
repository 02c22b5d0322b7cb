"""kit report from a record as the SLURM follower writes it (no cluster): a run kit restarted after a hang and a
job the queue requeued by itself are one window per listed attempt, each starting when its world started, never
numbered twice; a marked line with a non-number where the report computes is not an event (one bad line costs
nothing)."""

import json

from launcher.core.report import build
from launcher.insight.events import MARK
from launcher.records import RunRecord


def _record(tmp_path, **status) -> RunRecord:
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "status.json").write_text(json.dumps({"run_id": "r", "backend": "slurm", "job_id": "7",
                                                     "nodes": [{"rank": 0, "host": "n1"}], **status}))
    return RunRecord(str(run_dir))


def _log(record, *events):
    with open(record.file("node0.log"), "w") as f:
        for e in events:
            f.write(f"[node0/rank0] {MARK}{json.dumps(e)}\n")


def test_a_restarted_slurm_run_is_one_window_per_attempt(tmp_path):
    b = 1000.0   # times in seconds since an epoch of the test's own
    record = _record(tmp_path, state="succeeded", exit_code=0, created_at=b, submitted_at=b, started_at=b + 250,
                     finished_at=b + 400, attempts=[{"attempt": 1, "started_at": b + 10, "finished_at": b + 200,
                                                     "state": "failed", "exit_code": 124, "cause": "the run hung"}],
                     timeline=[{"at": b + 10, "event": "running", "attempt": 1, "detail": ""},
                               {"at": b + 250, "event": "running", "attempt": 2, "detail": ""}])
    _log(record, {"e": "train", "t": b + 20, "step": 0},
         {"e": "save", "t": b + 100, "t0": b + 100, "t1": b + 101, "step": 10},
         {"e": "step", "t": b + 190, "step": 19},
         {"e": "restore", "t": b + 260, "t0": b + 260, "t1": b + 261, "step": 10}, {"e": "train", "t": b + 262, "step": 10},
         {"e": "end", "t": b + 390, "step": 30})
    got = build(record, record.read_status(), "succeeded", now=b + 500)
    # Attempt 2's window starts when SLURM ran it again (the follower's started_at), not at the submission.
    assert [(a["attempt"], a["started_at"]) for a in got["attempts"]] == [(1, b + 10), (2, b + 250)]
    first = got["attempts"][0]
    # Attempt 1 trained on from its save (101 s) until it was last seen (190 s): progress lost to the restart.
    assert first["restored_step"] == 10 and first["lost_s"] == 89, first
    assert got["badput"]["restart"] == 50 and got["goodput"] == round((80 + 128) / 400, 4), got


def test_the_queues_own_requeue_is_counted_once(tmp_path):
    record = _record(tmp_path, state="succeeded", exit_code=0, created_at=0.0, started_at=60.0, finished_at=100.0,
                     attempts=[{"attempt": 1, "started_at": 5.0, "finished_at": 40.0, "state": "requeued",
                                "cause": "requeued by SLURM (preemption or scontrol requeue)"}],
                     timeline=[{"at": 5.0, "event": "running", "attempt": 1, "detail": ""},
                               {"at": 40.0, "event": "requeued", "attempt": 2, "detail": "BeginTime"},
                               {"at": 60.0, "event": "running", "attempt": 2, "detail": ""}])
    got = build(record, record.read_status(), "succeeded", now=100.0)
    assert [a["attempt"] for a in got["attempts"]] == [1, 2]
    assert {s[3] if len(s) > 3 else None for s in got["segments"]} <= {None, 1, 2}, got["segments"]


def test_a_marked_line_with_words_where_numbers_go_is_no_event(tmp_path):
    b = 1000.0
    record = _record(tmp_path, state="succeeded", exit_code=0, created_at=b, started_at=b + 1, finished_at=b + 50)
    _log(record, {"e": "save", "t": b + 10, "t0": "x", "t1": "y"}, {"e": "restore", "t": b + 11, "at": "soon"},
         {"e": "train", "t": b + 5, "step": 0}, {"e": "end", "t": b + 45, "step": 9})
    got = build(record, record.read_status(), "succeeded", now=b + 50)
    assert got["goodput_s"] == 40.0 and got["total_s"] == 50.0, got


def test_a_png_path_that_cannot_be_written_costs_the_drawing_only(tmp_path):
    """`kit report RUN --png /nonexistent/x.png` (issue 36): the text report, then one line naming the path, exit 2
    (it was a traceback and no report)."""
    import subprocess
    import sys

    _record(tmp_path, backend="local", state="succeeded", exit_code=0, created_at=1000.0, started_at=1010.0,
            finished_at=1100.0)
    missing = tmp_path / "nonexistent" / "x.png"
    r = subprocess.run([sys.executable, "-m", "launcher", "report", "r", "--run-root", str(tmp_path / "runs"),
                        "--png", str(missing)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == [f"kit: error: cannot write the timeline to {missing}: No such file or "
                                             f"directory; give a --png path in a directory that exists and that you "
                                             f"may write"], r.stderr
    assert "goodput" in r.stdout.lower() and "timeline drawn" not in r.stdout, r.stdout
    assert not missing.parent.exists()
