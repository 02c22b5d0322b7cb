"""The beginning of a run id names the run wherever a run id is taken (status, logs, cancel, wait, kit.get_run),
when no other run begins so; an ambiguous one is one line naming a few candidates, exit 2, and acts on nothing."""

import json
import os

from tests.launcher.apirun import run_api
from tests.launcher.localrun import kit


def _record(root, run_id, **status):
    d = root / run_id
    d.mkdir(parents=True)
    (d / "status.json").write_text(json.dumps({"run_id": run_id, "backend": "local", "job": "probe", **status}))
    (d / "node0.log").write_text(f"[node0] hello from {run_id}\n")
    return d


def _env(tmp_path):
    return {**os.environ, "KIT_HOME": str(tmp_path / "home")}


def test_a_unique_beginning_names_the_run_for_every_command(tmp_path):
    runs = tmp_path / "runs"
    _record(runs, "bert_cls-20261206-101500-4d90", state="failed", exit_code=4)
    _record(runs, "probe-20261206-101600-aa01", state="succeeded", exit_code=0)
    env = _env(tmp_path)
    status = kit("status", "bert", cwd=tmp_path, env=env)
    assert status.returncode == 4 and "run bert_cls-20261206-101500-4d90 " in status.stdout, status.stderr
    logs = kit("logs", "pro", cwd=tmp_path, env=env)
    assert logs.returncode == 0 and "hello from probe-20261206-101600-aa01" in logs.stdout, logs.stderr
    cancel = kit("cancel", "bert_cls-2026", cwd=tmp_path, env=env)
    assert cancel.stdout.startswith("run bert_cls-20261206-101500-4d90: already finished (failed, exit code 4)")
    waited = kit("wait", "probe", cwd=tmp_path, env=env)
    assert waited.returncode == 0 and "run probe-20261206-101600-aa01 succeeded" in waited.stderr, waited.stderr
    seen = run_api("seen['id'] = kit.get_run('bert').id", cwd=tmp_path, env=env)
    assert seen["id"] == "bert_cls-20261206-101500-4d90"


def test_an_ambiguous_beginning_is_one_line_naming_a_few_and_exit_2(tmp_path):
    runs = tmp_path / "runs"
    for i in range(6):
        _record(runs, f"sweepy-t{i}", state="running", supervisor_pid=2 ** 22 + 7, supervisor_start=1.0)
    env = _env(tmp_path)
    for argv in (("status", "sweepy"), ("logs", "sweepy-t"), ("cancel", "sweepy"), ("wait", "swe")):
        r = kit(*argv, cwd=tmp_path, env=env)
        assert r.returncode == 2 and r.stdout == "", (argv, r.stdout)
        assert r.stderr == (f"kit: error: run id {argv[1]} is ambiguous: it begins 6 runs (sweepy-t0, sweepy-t1, "
                            f"sweepy-t2, sweepy-t3 and 2 more); type more of it\n"), r.stderr
    said = run_api("seen['error'] = bad(lambda: kit.get_run('sweepy'))", cwd=tmp_path, env=env)
    assert said["error"].startswith("run id sweepy is ambiguous: it begins 6 runs")


def test_a_whole_id_wins_over_the_ids_it_begins(tmp_path):
    runs = tmp_path / "runs"
    _record(runs, "exp", state="succeeded", exit_code=0)
    _record(runs, "exp-2", state="failed", exit_code=3)
    r = kit("status", "exp", cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0 and "run exp  job" in r.stdout, r.stdout + r.stderr


def test_a_beginning_is_found_through_the_index_from_any_directory(tmp_path):
    here, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    elsewhere.mkdir()
    rec = _record(here / "runs", "indexed-20261206-aa", state="failed", exit_code=7)
    home = tmp_path / "home" / "index"
    home.mkdir(parents=True)
    os.symlink(rec, home / "indexed-20261206-aa")
    r = kit("status", "indexed", cwd=elsewhere, env=_env(tmp_path))
    assert r.returncode == 7 and f"record {rec}" in r.stdout, r.stdout + r.stderr
    # --run-root limits the search to that directory: nothing there begins so.
    (elsewhere / "runs").mkdir()
    r = kit("status", "indexed", "--run-root", "runs", cwd=elsewhere, env=_env(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("kit: error: run indexed: no record under runs/"), r.stderr


def test_a_beginning_of_nothing_says_there_is_no_such_run(tmp_path):
    _record(tmp_path / "runs", "alpha", state="succeeded", exit_code=0)
    r = kit("wait", "zeta", cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 2 and "run zeta: no record in kit's index" in r.stderr and "Traceback" not in r.stderr
