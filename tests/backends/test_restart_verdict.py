"""An attempt's end is not the run's verdict while a restart may follow (issue 36): a detached local run with
`restarts: 1` whose rank is SIGKILLed in attempt 1 and which succeeds in attempt 2. Whoever reads the run meanwhile
(`kit wait`, `kit logs --follow`, status.json itself, `kit status --json`) never sees it over, and attempt 2 carries
nothing of attempt 1's end."""

import json
import os
import signal
import threading

import pytest
import yaml

from tests.launcher.localrun import kit, kit_background, pids_of_run, wait_for

# Attempt 1 writes its marker (its pid) and sleeps until the test kills it; attempt 2 (the marker is there) says so and waits
# for the test's go-ahead, then ends well.
SCRIPT = """
import os, sys, time
here = sys.argv[1]
first = os.path.join(here, "attempt1")
if not os.path.exists(first):
    with open(first + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(first + ".tmp", first)
    print("attempt one sleeping", flush=True)
    time.sleep(600)
    sys.exit(3)
open(os.path.join(here, "attempt2"), "w").close()
print("attempt two running", flush=True)
while not os.path.exists(os.path.join(here, "go")):
    time.sleep(0.1)
print("attempt two done", flush=True)
"""

TERMINAL = {"succeeded", "failed", "cancelled", "timeout", "preempted", "lost"}


def _watch(path, stop, seen):
    """Read status.json as fast as it goes until `stop`: every terminal state or verdict field seen."""
    while not stop.is_set():
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        if data.get("state") in TERMINAL or data.get("exit_code") is not None or data.get("finished_at"):
            seen.append((data.get("state"), data.get("exit_code"), data.get("finished_at")))


@pytest.mark.slow
def test_a_killed_first_attempt_is_not_the_runs_verdict_when_the_second_succeeds(tmp_path):
    (tmp_path / "twice.py").write_text(SCRIPT)
    (tmp_path / "job.yaml").write_text(yaml.safe_dump({
        "name": "twice", "entrypoint": {"script": "twice.py"}, "args": [str(tmp_path)], "nodes": 1,
        "procs_per_node": 1, "restarts": 1}))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "l", "backend": "local"}))
    r = kit("submit", "job.yaml", "--cluster", "cluster.yaml", "--run-id", "twice", "--detach", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    root = str(tmp_path / "runs")
    waiter = kit_background("wait", "twice", "--run-root", root, cwd=tmp_path)
    follower = kit_background("logs", "twice", "--follow", "--run-root", root, cwd=tmp_path)
    stop, seen = threading.Event(), []
    reader = threading.Thread(target=_watch, args=(tmp_path / "runs" / "twice" / "status.json", stop, seen))
    try:
        assert wait_for(lambda: (tmp_path / "attempt1").exists(), timeout=180), "attempt 1 never started"
        reader.start()
        os.kill(int((tmp_path / "attempt1").read_text()), signal.SIGKILL)   # the rank's own process
        assert wait_for(lambda: (tmp_path / "attempt2").exists(), timeout=180), "attempt 2 never started"
        stop.set()
        reader.join()
        assert seen == [], f"a reader saw the run over during its restart: {seen[:3]}"

        during = kit("status", "twice", "--json", "--run-root", root, cwd=tmp_path)
        data = json.loads(during.stdout)
        assert data["state"] in ("starting", "running"), data
        assert data["exit_code"] is None and data["failure"] is None and data["times"]["finished_at"] is None, data
        first, second = data["attempts"]
        assert first["state"] == "failed" and first["exit_code"] == 137 and "SIGKILL" in first["cause"], first
        assert second["exit_code"] is None and second["finished_at"] is None and second["cause"] == "", second
        assert second["duration_s"] is not None and second["duration_s"] >= 0, second
        assert waiter.poll() is None and follower.poll() is None, "kit wait / kit logs --follow ended at attempt 1"

        (tmp_path / "go").write_text("")
        waited, _ = waiter.communicate(timeout=180)
        followed, _ = follower.communicate(timeout=180)
    finally:
        stop.set()
        for proc in (waiter, follower):
            if proc.poll() is None:
                proc.kill()
        if not (tmp_path / "go").exists():
            kit("cancel", "twice", "--run-root", root, cwd=tmp_path)
    assert waiter.returncode == 0, waited[-3000:]
    assert "attempt one sleeping" in followed and "attempt two done" in followed, followed[-3000:]
    assert follower.returncode == 0, followed[-3000:]
    status = json.loads((tmp_path / "runs" / "twice" / "status.json").read_text())
    assert status["state"] == "succeeded" and status["exit_code"] == 0 and status["failure"] is None, status
    assert pids_of_run("twice") == []
