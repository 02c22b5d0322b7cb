"""`kit status RUN` lists every attempt of a restarted run, `--json` gives the same as data in one stable shape, and
its exit code tells the state: 0 for a run that succeeded or is not over, else the run's exit code (kit wait's)."""

import json
import os

import pytest

from launcher.status import RunStatus
from launcher.supervise.tree import started_at
from launcher.core.waiting import LOST_CODE, end_code, status_code
from tests.launcher.localrun import kit

KEYS = {"run_id", "job", "backend", "record", "state", "note", "exit_code", "failure", "attempts", "nodes", "hosts",
        "job_id", "times", "straggler"}
ATTEMPT_KEYS = {"attempt", "state", "exit_code", "cause", "started_at", "finished_at", "duration_s"}


def _record(tmp_path, run_id, **status):
    d = tmp_path / "runs" / run_id
    d.mkdir(parents=True)
    (d / "status.json").write_text(json.dumps({"run_id": run_id, "backend": "local", "job": "probe", **status}))
    return d


def _restarted(tmp_path):
    return _record(
        tmp_path, "again", state="failed", exit_code=4, created_at=1000.0, started_at=1100.0, finished_at=1130.0,
        nodes=[{"rank": 0, "host": "n1", "pid": 11}, {"rank": 1, "host": "n2", "pid": 12}], node_exit_codes=[0, 1],
        failure={"node": 0, "host": "n1", "rank": 1, "code": 4, "meaning": "bad data", "last_line": "row 7"},
        attempts=[{"attempt": 1, "started_at": 1000.5, "finished_at": 1090.0, "state": "failed", "exit_code": 137,
                   "cause": "node 1 (n2) rank 3 exited 137 (killed by SIGKILL): step 40"}])


def test_json_gives_every_attempt_in_the_stable_shape(tmp_path):
    rec = _restarted(tmp_path)
    r = kit("status", "again", "--json", cwd=tmp_path)
    assert r.returncode == 4, r.stderr   # the run's exit code, with --json too
    data = json.loads(r.stdout)
    assert set(data) == KEYS and all(set(a) == ATTEMPT_KEYS for a in data["attempts"])
    assert (data["state"], data["exit_code"], data["record"]) == ("failed", 4, str(rec))
    first, second = data["attempts"]
    assert first == {"attempt": 1, "state": "failed", "exit_code": 137, "started_at": 1000.5, "finished_at": 1090.0,
                     "duration_s": 89.5, "cause": "node 1 (n2) rank 3 exited 137 (killed by SIGKILL): step 40"}
    assert second == {"attempt": 2, "state": "failed", "exit_code": 4, "started_at": 1100.0, "finished_at": 1130.0,
                      "duration_s": 30.0, "cause": "node 0 (n1) rank 1 exited 4 (bad data): row 7"}
    assert data["failure"] == {"node": 0, "host": "n1", "rank": 1, "exit_code": 4, "meaning": "bad data",
                               "last_line": "row 7", "cause": "node 0 (n1) rank 1 exited 4 (bad data): row 7"}
    assert data["nodes"] == [{"node": 0, "host": "n1", "pid": 11, "exit_code": 0, "stopped_by_kit": False},
                             {"node": 1, "host": "n2", "pid": 12, "exit_code": 1, "stopped_by_kit": False}]
    assert data["hosts"] == ["n1", "n2"] and data["job_id"] is None
    assert data["times"] == {"created_at": 1000.0, "submitted_at": None, "started_at": 1000.5,
                             "finished_at": 1130.0, "duration_s": 129.5}


def test_text_lists_every_attempt_with_its_end(tmp_path):
    _restarted(tmp_path)
    r = kit("status", "again", cwd=tmp_path)
    attempts = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("attempt ")]
    assert len(attempts) == 2, r.stdout
    assert attempts[0].endswith("(1m29s)  failed, exit 137: node 1 (n2) rank 3 exited 137 (killed by SIGKILL): "
                                "step 40"), attempts
    assert attempts[1].endswith("(30s)  failed, exit 4: node 0 (n1) rank 1 exited 4 (bad data): row 7"), attempts
    assert " -> " in attempts[0] and r.stdout.rstrip().endswith("exit code 4")


def test_a_run_never_restarted_shows_no_attempt_lines_but_has_one_in_json(tmp_path):
    _record(tmp_path, "once", state="succeeded", exit_code=0, started_at=50.0, finished_at=60.0)
    r = kit("status", "once", cwd=tmp_path)
    assert r.returncode == 0 and "attempt" not in r.stdout
    data = json.loads(kit("status", "once", "--json", cwd=tmp_path).stdout)
    assert [(a["attempt"], a["state"], a["exit_code"], a["duration_s"]) for a in data["attempts"]] == \
        [(1, "succeeded", 0, 10.0)]


@pytest.mark.parametrize("fields, code", [
    ({"state": "running", "supervisor_pid": os.getpid(), "supervisor_start": started_at(os.getpid())}, 0),   # not over
    ({"state": "failed", "exit_code": 7}, 7),
    ({"state": "cancelled", "exit_code": 130}, 130),
    ({"state": "cancelled"}, 143),               # an end recorded without its code: what kit cancel sends
    ({"state": "running", "supervisor_pid": 2 ** 22 + 7, "supervisor_start": 1.0}, LOST_CODE),   # lost
])
def test_the_exit_code_tells_the_state(tmp_path, fields, code):
    _record(tmp_path, "r", **fields)
    r = kit("status", "r", cwd=tmp_path)
    assert r.returncode == code, r.stdout + r.stderr
    data = json.loads(kit("status", "r", "--json", cwd=tmp_path).stdout)
    assert data["exit_code"] == (None if code == 0 else code)


def test_end_codes():
    assert end_code("running", RunStatus(state="running")) is None and status_code("pending", RunStatus()) == 0
    assert end_code("succeeded", RunStatus(exit_code=0)) == 0
    assert end_code("failed", RunStatus(exit_code=137)) == 137
    assert end_code("failed", RunStatus(exit_code=0)) == 1     # a failed run never reads as a success
    assert end_code("preempted", RunStatus()) == 75 and end_code("lost", RunStatus()) == LOST_CODE
    assert end_code("lost", RunStatus(exit_code=255)) == 255 and end_code("timeout", RunStatus(exit_code=124)) == 124


def test_the_api_describes_a_run_as_kit_status_json_does(tmp_path):
    from tests.launcher.apirun import run_api
    _restarted(tmp_path)
    seen = run_api("data = kit.get_run('again').describe(); seen['data'] = data\n"
                   "seen['types'] = sorted({type(v).__name__ for a in data['attempts'] for v in a.values()} |\n"
                   "                       {type(data['state']).__name__})", cwd=tmp_path)
    printed = json.loads(kit("status", "again", "--json", cwd=tmp_path).stdout)
    assert seen["data"] == printed
    # Plain data, as --json prints it: a state is its word (a str), never a typed state's repr.
    assert set(seen["types"]) <= {"str", "int", "float", "NoneType"}, seen["types"]


def test_a_record_kit_does_not_trust_is_read_never_asked_about(tmp_path):
    running = _record(tmp_path, "theirs", state="running", supervisor_pid=os.getpid(),
                      supervisor_start=started_at(os.getpid()))
    ended = _record(tmp_path, "theirs-done", state="failed", exit_code=4)
    for d in (running, ended):
        os.chown(d / "status.json", 65534, 65534)
    r = kit("wait", "theirs", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("kit: error: run record ") and "not trusted" in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert kit("wait", "theirs-done", cwd=tmp_path).returncode == 4   # what it records is all kit reads
    assert kit("status", "theirs-done", cwd=tmp_path).returncode == 4
    assert kit("status", "theirs", cwd=tmp_path).returncode == 0
