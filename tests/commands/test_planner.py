"""The forked planner (launcher/commands/planner.py): kit submit's first half in a child process gives what it
gives in-process, reports a user's mistake as the same one-line error, a crash as a crash, and leaves no
process behind however it ends."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml

from launcher.cli import parse
from launcher.commands.planner import Planner, PlannerFailed
from launcher.commands.submit import request_of
from launcher.core import prepare
from launcher.core.request import Request
from launcher.errors import KitError
from tests.launcher.localrun import REPO


def _files(tmp_path, job_extra=None) -> tuple[str, str]:
    job = {"name": "j", "entrypoint": {"module": "train"}, "nodes": 2, "procs_per_node": 1,
           "env": {"API_TOKEN": "s3cret"}, **(job_extra or {})}
    cluster = {"name": "boxes", "backend": "ssh", "workdir": "/srv/kit",
               "hosts": [{"name": "a", "address": "10.0.0.11"}, {"name": "b", "address": "10.0.0.12"}],
               "ssh": {"user": "train", "port": 2222}}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    return str(tmp_path / "job.yaml"), str(tmp_path / "cluster.yaml")


def _args(tmp_path, **job_extra) -> Request:
    job, cluster = _files(tmp_path, job_extra)
    return request_of(parse(["submit", job, "--cluster", cluster, "--run-id", "r1"]))


def _gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True   # reaped: not our child any more
    return False


def test_the_planner_gives_what_the_first_half_gives_here(tmp_path):
    args = _args(tmp_path)
    planner = Planner(args)
    pid = planner.pid
    try:
        forked = planner.result()
    finally:
        planner.close()
    assert forked == prepare.prepared_for(args)
    assert forked.plan.run_id == "r1" and [n.host for n in forked.plan.nodes] == ["a", "b"]
    assert forked.binding["settings"]["port"] == 2222 and forked.binding["addresses"]["b"] == "10.0.0.12"
    assert forked.job_record["env"]["API_TOKEN"] != "s3cret"   # masked before it leaves the planner
    assert _gone(pid)


def test_a_mistake_in_the_specs_is_the_same_one_line_error(tmp_path):
    args = _args(tmp_path, nodes="two")
    with pytest.raises(KitError) as here:
        prepare.prepared_for(args)
    planner = Planner(args)
    try:
        with pytest.raises(KitError) as forked:
            planner.result()
    finally:
        planner.close()
    assert str(forked.value) == str(here.value) and "nodes" in str(forked.value)


def test_a_crash_in_the_planner_is_reported_with_its_traceback(tmp_path, monkeypatch):
    def broken(args):
        raise ZeroDivisionError("a bug in planning")
    monkeypatch.setattr(prepare, "prepared_for", broken)   # the fork inherits it
    planner = Planner(_args(tmp_path))
    try:
        with pytest.raises(PlannerFailed, match="(?s)Traceback.*ZeroDivisionError: a bug in planning"):
            planner.result()
    finally:
        planner.close()


def test_a_planner_killed_before_answering_is_a_clear_failure(tmp_path, monkeypatch):
    monkeypatch.setattr(prepare, "prepared_for", lambda args: time.sleep(60))
    planner = Planner(_args(tmp_path))
    pid = planner.pid
    try:
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(PlannerFailed, match="without an answer \\(killed by signal 9\\)"):
            planner.result()
    finally:
        planner.close()
    assert _gone(pid)


def test_ctrl_c_reaches_kit_not_the_planner_and_close_ends_it(tmp_path, monkeypatch):
    # Ctrl-C goes to the whole foreground group: the planner ignores it and answers; kit decides. A planner
    # still busy when kit gives up (close) is killed and reaped, not left behind.
    monkeypatch.setattr(prepare, "prepared_for", lambda args: (time.sleep(1.5), "answered")[1])
    planner = Planner(_args(tmp_path))
    time.sleep(0.5)
    os.kill(planner.pid, signal.SIGINT)
    assert planner.result() == "answered"
    planner.close()
    monkeypatch.setattr(prepare, "prepared_for", lambda args: time.sleep(60))
    busy = Planner(_args(tmp_path))
    pid = busy.pid
    busy.close()
    assert _gone(pid)


def test_ctrl_c_while_kit_waits_for_the_plan_is_one_line_and_ends_the_planner(tmp_path, monkeypatch):
    monkeypatch.setattr(prepare, "prepared_for", lambda args: time.sleep(60))
    planner = Planner(_args(tmp_path))
    pid = planner.pid
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KitError, match="^interrupted while planning; nothing was started$"):
            planner.result()
    finally:
        timer.join()
        planner.close()
    assert _gone(pid)


def test_a_forked_copy_of_kit_never_touches_the_planner(tmp_path, monkeypatch):
    # A detached supervisor is a fork of kit: were it to close the planner, it would signal a pid that is not
    # its child (and, once kit reaped it, maybe no longer the planner's).
    monkeypatch.setattr(prepare, "prepared_for", lambda args: (time.sleep(1), "answered")[1])
    planner = Planner(_args(tmp_path))
    copy = os.fork()
    if copy == 0:
        planner.close()
        os._exit(0)
    os.waitpid(copy, 0)
    try:
        assert planner.result() == "answered"
    finally:
        planner.close()


def test_an_answer_larger_than_a_pipe_buffer_arrives_whole(tmp_path, monkeypatch):
    big = "x" * (1 << 20)
    monkeypatch.setattr(prepare, "prepared_for", lambda args: big)
    planner = Planner(_args(tmp_path))
    try:
        assert planner.result() == big
    finally:
        planner.close()


ISOLATED = """
import os, sys
from launcher.cli import parse
from launcher.commands.planner import Planner
from launcher.commands.submit import request_of
from launcher.core import prepare
real = prepare.prepared_for
def probe(args):
    real(args)
    return ("importlib.metadata" in sys.modules, os.environ.get("PYDANTIC_DISABLE_PLUGINS"))
prepare.prepared_for = probe
p = Planner(request_of(parse(["submit", sys.argv[1], "--cluster", sys.argv[2], "--run-id", "r1"])))
print("child:", p.result())
p.close()
print("kit:", "pydantic" in sys.modules, "importlib.metadata" in sys.modules,
      os.environ.get("PYDANTIC_DISABLE_PLUGINS"))
"""


def test_the_planner_loads_the_schemas_without_plugins_and_kit_not_at_all(tmp_path):
    # pydantic's plugin search (and importlib.metadata for it) is ~15 ms of the planner's CPU; its switch is
    # an environment variable, set in the planner only: kit's own environment (and its nodes') keeps none.
    job, cluster = _files(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    r = subprocess.run([sys.executable, "-c", ISOLATED, job, cluster], cwd=REPO, capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["child: (False, '__all__')", "kit: False False None"]
