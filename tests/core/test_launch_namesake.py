"""The run id check is made again after the checks (launch.py): a run of the same id started from another run root
while this one's checks waited (an SSH run's logins take seconds) keeps its name, and this one's record goes."""

import json
import os

import psutil
import pytest

from launcher import run_index
from launcher.backends.local.backend import LocalBackend
from launcher.errors import KitError
from launcher.core.launch import Prepared, launch
from tests.launcher.planning import LOCAL_CPU, cluster, job, plan


class SlowChecks(LocalBackend):
    """Its checks end after another run of the same id has been indexed, as if started meanwhile."""

    def __init__(self, other):
        super().__init__()
        self.other = other

    def check(self, plan, base_dir):
        me = psutil.Process()
        self.other.mkdir(parents=True)
        (self.other / "status.json").write_text(json.dumps({
            "run_id": plan.run_id, "backend": "local", "state": "running",
            "supervisor_pid": me.pid, "supervisor_start": me.create_time()}))
        run_index.remember(str(self.other))


def test_a_namesake_started_during_the_checks_keeps_its_name(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "home"))
    p = plan(job(), cluster(LOCAL_CPU), run_id="dup")
    other = tmp_path / "elsewhere" / "runs" / "dup"
    here = tmp_path / "here"
    here.mkdir()
    prepared = Prepared(p, ".", {}, {}, None)
    with pytest.raises(KitError, match=f"^run id dup is taken by a run still running at {other};"):
        launch(prepared, str(here), backend=SlowChecks(other))
    assert not os.path.exists(here / p.run_dir)   # this one's record taken back
    assert os.readlink(tmp_path / "home" / "index" / "dup") == str(other)
