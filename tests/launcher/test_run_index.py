"""One index of a user's runs: `kit runs / status / logs / cancel` find a run from any directory; `kit runs` is
newest first with durations and filters; `kit logs --rank/--tail/--follow`. Real local runs, each test with a
KIT_HOME of its own."""

import json
import os
import re
import time

import pytest

from launcher import run_index
from launcher.commands.runs import since
from launcher.render.text import duration
from launcher.errors import KitError
from tests.launcher.localrun import LOCAL_CLUSTER, kit, kit_background, wait_for, write_job


@pytest.fixture
def home(tmp_path, monkeypatch):
    path = tmp_path / "kit-home"
    monkeypatch.setenv("KIT_HOME", str(path))
    return path


def _dirs(tmp_path):
    a, b = tmp_path / "project-a", tmp_path / "somewhere-else"
    a.mkdir()
    b.mkdir()
    return a, b


def _probe_job(where, name="probe", procs=2, args=()):
    out = where / f"out-{name}"
    out.mkdir(exist_ok=True)
    return write_job(where, name=name, nodes=1, procs=procs, args=["--out", str(out), *args])


@pytest.mark.slow
def test_a_run_is_found_from_any_directory(home, tmp_path):
    a, b = _dirs(tmp_path)
    r = kit("submit", _probe_job(a), "--cluster", LOCAL_CLUSTER, "--run-id", "idx-a", cwd=a)
    assert r.returncode == 0, r.stderr
    assert os.readlink(home / "index" / "idx-a") == str(a / "runs" / "idx-a")
    status = kit("status", "idx-a", cwd=b)
    assert status.returncode == 0 and "run idx-a  job probe  backend local  state succeeded" in status.stdout
    assert f"record {a / 'runs' / 'idx-a'}" in status.stdout
    latest = kit("status", cwd=b)   # no id: the newest of all the user's runs
    assert "run idx-a " in latest.stdout
    logs = kit("logs", "idx-a", cwd=b)
    assert "probe rank 0/2 ready" in logs.stdout and "probe rank 1/2 ready" in logs.stdout
    listed = kit("runs", cwd=b).stdout
    assert re.search(r"^idx-a +local +succeeded +0  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  \d+s$", listed, re.M), listed
    # --run-root still means only that directory.
    assert kit("runs", "--run-root", "runs", cwd=b).stdout == "no runs under runs/\n"


@pytest.mark.slow
def test_a_deleted_record_is_dropped_from_the_index_and_a_missing_run_is_one_line(home, tmp_path):
    a, b = _dirs(tmp_path)
    assert kit("submit", _probe_job(a), "--cluster", LOCAL_CLUSTER, "--run-id", "gone", cwd=a).returncode == 0
    import shutil
    shutil.rmtree(a / "runs" / "gone")
    r = kit("status", "gone", cwd=b)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"run gone: no record in kit's index ({home}/index) or under runs/" in r.stderr
    assert not os.path.lexists(home / "index" / "gone")


@pytest.mark.slow
def test_runs_are_listed_newest_first_and_filtered(home, tmp_path):
    a, b = _dirs(tmp_path)
    assert kit("submit", _probe_job(a), "--cluster", LOCAL_CLUSTER, "--run-id", "first", cwd=a).returncode == 0
    failing = _probe_job(b, name="failing", args=["--fail-rank", "1"])
    assert kit("submit", failing, "--cluster", LOCAL_CLUSTER, "--run-id", "second", cwd=b).returncode != 0
    listed = kit("runs", cwd=tmp_path).stdout.splitlines()
    ids = [line.split()[0] for line in listed[1:]]
    assert ids == ["second", "first"], listed
    assert [ln.split()[0] for ln in kit("runs", "--state", "failed", cwd=a).stdout.splitlines()[1:]] == ["second"]
    assert kit("runs", "--backend", "slurm", cwd=a).stdout == "no runs match\n"
    assert len(kit("runs", "--since", "1h", cwd=a).stdout.splitlines()) == 3
    assert kit("runs", "--since", "2999-01-01", cwd=a).stdout == "no runs match\n"
    unknown = kit("runs", "--state", "bogus", cwd=a)
    assert unknown.returncode == 2 and "--state bogus: a run is one of starting, running" in unknown.stderr
    bad = kit("runs", "--since", "yesterday", cwd=a)
    assert bad.returncode == 2 and "--since yesterday: expected a span like 30m" in bad.stderr


@pytest.mark.slow
def test_logs_of_one_rank_its_tail_and_a_followed_tail(home, tmp_path):
    a, b = _dirs(tmp_path)
    job = _probe_job(a, args=["--flood", "3000"])
    assert kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "lg", cwd=a).returncode == 0
    one = kit("logs", "lg", "--rank", "1", cwd=b).stdout.splitlines()
    assert one[0] == "==> node0.log <==" and len(one) > 3
    assert all(line.startswith("[node0/rank1] ") for line in one[1:]), one
    tail = kit("logs", "lg", "--rank", "0", "--tail", "2", cwd=b).stdout.splitlines()
    assert len(tail) == 3 and all(line.startswith("[node0/rank0] ") for line in tail[1:])
    whole = kit("logs", "lg", cwd=b).stdout.splitlines()
    assert kit("logs", "lg", "--tail", "2", cwd=b).stdout.splitlines() == [whole[0], *whole[-2:]]
    followed = kit("logs", "lg", "--rank", "1", "--tail", "1", "--follow", cwd=b).stdout.splitlines()
    assert followed == [one[-1]]
    assert kit("logs", "lg", "--tail", "0", cwd=b).returncode == 2


def test_cancel_from_another_directory_stops_the_run(home, tmp_path):
    a, b = _dirs(tmp_path)
    job = _probe_job(a, args=["--linger", "120"])
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "cx", "--detach", cwd=a)
    proc.communicate(timeout=60)
    assert wait_for(lambda: "state running" in kit("status", "cx", cwd=b).stdout, timeout=60)
    r = kit("cancel", "cx", cwd=b)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: "state cancelled" in kit("status", "cx", cwd=b).stdout, timeout=60)


def test_the_index_never_costs_a_run_when_kit_home_cannot_be_written(tmp_path, monkeypatch):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    monkeypatch.setenv("KIT_HOME", str(blocked))
    run_index.remember(str(tmp_path))          # no error, nothing written
    assert run_index.where(tmp_path.name) is None and blocked.read_text() == ""


def test_durations_and_since():
    assert [duration(s) for s in (None, 5, 65, 3725, 90000)] == ["-", "5s", "1m05s", "1h02m", "1d01h"]
    now = time.time()
    assert since("30m", now) == now - 1800 and since("2d", now) == now - 2 * 86400
    assert since("2026-12-01", now) == time.mktime(time.strptime("2026-12-01", "%Y-%m-%d"))
    with pytest.raises(KitError):
        since("soon", now)


@pytest.mark.slow
def test_a_finished_run_id_from_another_directory_is_refused_with_another_id_to_take(home, tmp_path):
    # Two runs of one id in two run roots gave two rows in `kit runs`, and `kit status ID` answered depending on
    # the directory: a run id names one run, whatever its run root and state.
    a, b = _dirs(tmp_path)
    assert kit("submit", _probe_job(a), "--cluster", LOCAL_CLUSTER, "--run-id", "dup", cwd=a).returncode == 0
    run_index.remember(str(tmp_path / "c" / "runs" / "dup-2"))   # indexed, but its record is gone: free again
    expected = (f"kit: error: run id dup is taken by a run that ended (succeeded) at {a / 'runs' / 'dup'}; pick "
                f"another --run-id, e.g. dup-2\n")
    for dry in ([], ["--dry-run"]):   # the dry-run checks what the run checks
        again = kit("submit", _probe_job(b), "--cluster", LOCAL_CLUSTER, "--run-id", "dup", *dry, cwd=b)
        assert (again.returncode, again.stdout, again.stderr) == (2, "", expected)
    assert not (b / "runs").exists() and not os.listdir(b / "out-probe")
    assert os.readlink(home / "index" / "dup") == str(a / "runs" / "dup")
    assert kit("runs", cwd=b).stdout.count("dup ") == 1
    # In its own run root the id is taken as well (the record is there).
    here = kit("submit", _probe_job(a), "--cluster", LOCAL_CLUSTER, "--run-id", "dup", cwd=a)
    assert here.returncode == 2 and "run id dup is taken by a run that ended (succeeded)" in here.stderr


@pytest.mark.slow
def test_logs_show_redraws_without_kits_mark_and_refuse_a_rank_outside_the_world(home, tmp_path):
    a, _ = _dirs(tmp_path)
    assert kit("submit", _probe_job(a, args=["--progress", "3"]), "--cluster", LOCAL_CLUSTER, "--run-id", "pm",
               cwd=a).returncode == 0
    shown = kit("logs", "pm", cwd=a).stdout
    assert "step 1/3" in shown and "\x1b" not in shown
    r = kit("logs", "pm", "--rank", "2", cwd=a)
    assert r.returncode == 2 and "--rank 2: run pm has ranks 0 to 1" in r.stderr


def test_a_relative_kit_home_is_one_index_from_every_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KIT_HOME", "rel-home")
    monkeypatch.chdir("/")
    assert run_index.kit_home() == str(tmp_path / "rel-home")


def test_a_run_id_still_running_elsewhere_is_not_taken_nor_once_it_ended(home, tmp_path):
    a, b = _dirs(tmp_path)
    first = kit_background("submit", _probe_job(a, args=("--linger", "60")), "--cluster", LOCAL_CLUSTER,
                           "--run-id", "twice", cwd=a)
    try:
        assert wait_for(lambda: "state running" in kit("status", "twice", cwd=b).stdout, timeout=60)
        second = kit("submit", _probe_job(b), "--cluster", LOCAL_CLUSTER, "--run-id", "twice", cwd=b)
        assert second.returncode == 2, second.stdout + second.stderr
        assert second.stderr.count("\n") == 1 and "run id twice is taken by a run still running at " \
            f"{a / 'runs' / 'twice'}" in second.stderr and "kit cancel twice" in second.stderr, second.stderr
        assert not (b / "runs" / "twice").exists() and not os.listdir(b / "out-probe")
        assert os.readlink(home / "index" / "twice") == str(a / "runs" / "twice")   # still reaches the first
        assert kit("cancel", "twice", cwd=b).returncode == 0
        first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    # Over, it still names that run: a new one takes another id.
    again = kit("submit", _probe_job(b), "--cluster", LOCAL_CLUSTER, "--run-id", "twice", cwd=b)
    assert again.returncode == 2 and "run id twice is taken by a run that ended (cancelled) at " in again.stderr
    assert os.readlink(home / "index" / "twice") == str(a / "runs" / "twice")


def test_a_run_id_whose_supervisor_is_gone_is_taken_as_lost(home, tmp_path):
    # The record still says running, but the process that followed it is gone (killed with the machine): lost,
    # and its record (node logs, the cause) still answers to the name.
    a, b = _dirs(tmp_path)
    ghost = a / "runs" / "ghost"
    ghost.mkdir(parents=True)
    (ghost / "status.json").write_text(json.dumps({"run_id": "ghost", "backend": "local", "state": "running",
                                                   "supervisor_pid": 2 ** 22 + 7, "supervisor_start": 1.0}))
    run_index.remember(str(ghost))
    r = kit("submit", _probe_job(b), "--cluster", LOCAL_CLUSTER, "--run-id", "ghost", cwd=b)
    assert r.returncode == 2 and f"run id ghost is taken by a run that ended (lost) at {ghost}; pick another " \
        "--run-id, e.g. ghost-2" in r.stderr, r.stderr
    assert os.readlink(home / "index" / "ghost") == str(ghost)


def test_a_hint_names_the_run_root_only_where_the_id_alone_does_not_find_the_run(tmp_path, monkeypatch, home):
    """Issue 41: after Ctrl-C of a SLURM run the hint added `--run-root DIR`, though `kit status RUN` finds it."""
    here, other = _dirs(tmp_path)
    monkeypatch.chdir(here)
    local = here / "runs" / "r1"
    local.mkdir(parents=True)
    assert run_index.root_flag(str(local)) == ""                     # ./runs/r1 from here
    elsewhere = other / "roots" / "r2"
    elsewhere.mkdir(parents=True)
    assert run_index.root_flag(str(elsewhere)) == f" --run-root {other / 'roots'}"   # not indexed
    run_index.remember(str(elsewhere))
    assert run_index.root_flag(str(elsewhere)) == ""                  # the index finds it from anywhere
    namesake = other / "roots" / "r1"                                 # ./runs/r1 here is another run of that id
    namesake.mkdir()
    run_index.remember(str(namesake))
    assert run_index.root_flag(str(namesake)) == f" --run-root {other / 'roots'}"
