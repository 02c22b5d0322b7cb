"""What kit acts on from a record (issue 29): a pid only with its start time (a pid alone may be anyone's by now),
and a run found lost is written back, so no later listing asks its hosts again."""

import json
import subprocess
import time

from launcher.core import lookup
from launcher.backends.ssh import cancel as ssh_cancel
from launcher.records import RunRecord
from launcher.status import NodeStatus, RunStatus
from launcher.supervise import tree
from tests.launcher.localrun import kit


def _write(path, **fields):
    path.mkdir(parents=True, exist_ok=True)
    (path / "status.json").write_text(json.dumps({"run_id": path.name, **fields}))
    return RunRecord(str(path))


def test_a_pid_without_its_start_time_is_never_signalled(tmp_path):
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        _write(tmp_path / "runs" / "planted", backend="local", state="running", supervisor_pid=bystander.pid,
               nodes=[{"rank": 0, "host": "localhost", "pid": bystander.pid}])
        r = kit("cancel", "planted", "--run-root", str(tmp_path / "runs"), cwd=tmp_path, timeout=60)
        assert r.returncode == 0, r.stderr
        time.sleep(0.5)
        assert bystander.poll() is None, "kit cancel signalled a process the record named without its start time"
        # With the start time of another process (the pid reused since), likewise.
        assert tree.same_process(bystander.pid, tree.started_at(bystander.pid) + 5) is None
        assert tree.same_process(bystander.pid, None) is None
        assert tree.same_process(bystander.pid, tree.started_at(bystander.pid)) is not None
    finally:
        bystander.kill()
        bystander.wait()


def test_an_ssh_node_without_start_ticks_is_not_acted_on():
    status = RunStatus(nodes=(NodeStatus(0, "n1", pid=123, start_ticks="456"), NodeStatus(1, "n2", pid=124)))
    assert {h: [n.rank for n in ns] for h, ns in ssh_cancel._nodes_by_host(status).items()} == {"n1": [0]}


def test_a_run_found_lost_stays_lost_and_its_hosts_are_asked_once(tmp_path, monkeypatch):
    dead = subprocess.Popen(["true"])
    started = tree.started_at(dead.pid)
    dead.wait()
    record = _write(tmp_path / "ssh-lost", backend="ssh", state="running", supervisor_pid=dead.pid,
                    supervisor_start=started, ssh={"user": "root"},
                    nodes=[{"rank": 0, "host": "n1", "pid": 77, "start_ticks": "88"}])
    asked = []
    monkeypatch.setattr(ssh_cancel, "remote_alive", lambda rec, st: asked.append(st.run_id) or (0, []))
    assert lookup.state_now(record)[0] == "lost"
    status = record.read_status()
    assert status.state == "lost" and "died before recording the outcome" in status.note and status.finished_at
    assert lookup.state_now(record)[0] == "lost"
    assert asked == ["ssh-lost"]   # the second look read the record, and logged in nowhere
