"""The backend contract (launcher/backends/base.py), the same tests on every backend: kit's local one, SSH and SLURM
on the harness hosts, and the subprocess backend written from scratch in the tests on the contract alone
(tests/plugins/kit_subprocess_backend, registered through its `kit.backends` entry point, driven through the real
CLI). A 2-node probe job succeeds and its record says so; a failing rank fails the run with its exit code and no
node is left; `kit cancel` leaves nothing; the plan the run recorded and ran is the dry-run's."""

import inspect
import json
import os
from dataclasses import dataclass
from typing import Callable, Optional

import pytest
import yaml

from tests.launcher.localrun import LOCAL_CLUSTER, REPO, kit, pids_of_run, reports, wait_for, write_job

PLUGIN = os.path.join(REPO, "tests", "plugins", "kit_subprocess_backend")

BACKENDS = [
    "local",
    "subprocess",
    pytest.param("ssh", marks=pytest.mark.harness),
    pytest.param("slurm", marks=pytest.mark.harness),
]


@dataclass
class On:
    """A backend as the tests drive it: where kit runs, the cluster config, kit's environment, what is left of a
    run on its hosts, and the flags its submits add."""

    backend: str
    cwd: str
    cluster: str
    env: Optional[dict]
    left: Callable[[str], object]
    flags: tuple = ()

    def kit(self, *argv, **kw):
        return kit(*argv, cwd=self.cwd, env=self.env, **kw)

    def submit(self, job, run_id, *more, **kw):
        return self.kit("submit", job, "--cluster", self.cluster, "--run-id", run_id, *self.flags, *more, **kw)

    def status(self, run_id) -> dict:
        r = self.kit("status", run_id, "--json")  # its exit code is the run's
        assert r.stdout, r.stderr
        return json.loads(r.stdout)

    def record(self, run_id, name) -> dict:
        with open(os.path.join(self.cwd, "runs", run_id, name), encoding="utf-8") as f:
            return json.load(f)


def plugin_env(tmp_path) -> dict:
    """kit's environment with the subprocess backend on its path, as pip lays out an installed package: its
    metadata (the `kit.backends` entry point) in a .dist-info, its package importable."""
    site = tmp_path / "site"
    info = site / "kit_subprocess_backend-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kit-subprocess-backend\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[kit.backends]\nsubprocess = kit_subprocess_backend\n")
    path = os.pathsep.join(p for p in (str(site), PLUGIN, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


@pytest.fixture(params=BACKENDS)
def on(request, tmp_path) -> On:
    name = request.param
    if name == "local":
        return On(name, str(tmp_path), LOCAL_CLUSTER, None, pids_of_run)
    if name == "subprocess":
        cluster = tmp_path / "subprocess.yaml"
        hosts = [{"name": "a", "address": "127.0.0.1"}, {"name": "b", "address": "127.0.0.1"}]
        cluster.write_text(
            yaml.safe_dump(
                {
                    "name": "sp",
                    "backend": "subprocess",
                    "hosts": hosts,
                    "cpu_threads_per_process": 1,
                    "gpus_per_node": 0,
                    "teardown_grace": 30,
                }
            )
        )
        return On(name, str(tmp_path), str(cluster), plugin_env(tmp_path), pids_of_run)
    if name == "ssh":
        from tests.backends import sshrun

        hosts = request.getfixturevalue("ssh_hosts")
        return On(
            name,
            sshrun.workdir(hosts),
            sshrun.cluster(hosts, tmp_path),
            None,
            lambda run_id: sshrun.leftovers(hosts, run_id),
        )
    from tests.backends import slurmrun

    slurm = request.getfixturevalue("slurm_cluster")
    return On(
        name,
        slurmrun.workdir(slurm),
        slurmrun.cluster_file(slurm, tmp_path),
        None,
        lambda run_id: slurmrun.probe_processes(slurm, run_id),
        ("--gpus", "0"),
    )


def _out(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    return out


def test_a_two_node_probe_job_succeeds_and_runs_the_dry_runs_plan(on, tmp_path):
    out = _out(tmp_path)
    run_id = f"contract-ok-{on.backend}"
    # --linger: both ranks stay up a moment after the all-reduce (a rank leaving gloo early can abort at exit).
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "1"])
    dry = on.submit(job, run_id, "--dry-run", "--format", "json")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    r = on.submit(job, run_id, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    got = reports(out)
    assert sorted((g["rank"], g["machine_rank"], g["dist_world"], g["allreduce_sum"]) for g in got) == [
        (0, 0, 2, 3.0),
        (1, 1, 2, 3.0),
    ]
    status = on.status(run_id)
    assert status["state"] == "succeeded" and status["exit_code"] == 0, status
    assert on.record(run_id, "status.json")["backend"] == on.backend
    # The dry-run is what ran: the plan the run recorded (each node's command included) is the dry-run's.
    executed = on.record(run_id, "plan.json")
    assert executed == planned
    assert [n["command"] for n in executed["nodes"]] == [n["command"] for n in planned["nodes"]]
    assert wait_for(lambda: not on.left(run_id), timeout=30), on.left(run_id)


def test_a_failing_rank_fails_the_run_with_its_code_and_stops_every_node(on, tmp_path):
    out = _out(tmp_path)
    run_id = f"contract-fail-{on.backend}"
    # Rank 0 would stay 300 s: only the teardown of every node ends the run in time.
    job = write_job(tmp_path, args=["--out", str(out), "--fail-rank", "1", "--fail-code", "4", "--linger", "300"])
    r = on.submit(job, run_id, timeout=240)
    assert r.returncode == 4, r.stdout + r.stderr
    status = on.status(run_id)
    assert status["state"] == "failed" and status["exit_code"] == 4, status
    assert wait_for(lambda: not on.left(run_id), timeout=60), on.left(run_id)


def test_cancel_leaves_nothing(on, tmp_path):
    out = _out(tmp_path)
    run_id = f"contract-cancel-{on.backend}"
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "300"])
    r = on.submit(job, run_id, "--detach", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        assert wait_for(lambda: len(reports(out)) == 2, timeout=150), on.kit("logs", run_id).stdout
        assert on.status(run_id)["state"] == "running"
        c = on.kit("cancel", run_id, timeout=150)
        assert c.returncode == 0 and "cancelled" in c.stdout, c.stdout + c.stderr
        assert not on.left(run_id), on.left(run_id)
        assert on.status(run_id)["state"] == "cancelled"
    finally:
        on.kit("cancel", run_id, timeout=150)


def test_the_scratch_backend_is_written_on_the_contract_alone():
    """Its classes derive from the contract's bases only, and nothing of kit's own backends is imported."""
    import sys

    sys.path.insert(0, PLUGIN)
    try:
        from kit_subprocess_backend import backend, placement
    finally:
        sys.path.remove(PLUGIN)
    from launcher.backends.base import Backend
    from launcher.planning.placement import Placement

    assert backend.BACKEND.__mro__[1] is Backend
    assert placement.PLACEMENT.__class__.__mro__[1] is Placement
    for module in (backend, placement):
        source = inspect.getsource(module)
        assert "launcher.backends.local" not in source and "launcher.backends.ssh" not in source
        assert "launcher.backends.slurm" not in source


def test_the_contract_is_small():
    """At most 10 abstract methods on Backend (TorchX's Scheduler has 5) and at most 10 public methods on Placement
    (26 before issue 36, 22 after its first pass): what is constant per backend is data, not a method."""
    from launcher.backends.base import Backend
    from launcher.planning.placement import Placement

    assert len(Backend.__abstractmethods__) <= 10, sorted(Backend.__abstractmethods__)
    public = [n for n, v in vars(Placement).items() if callable(v) and not n.startswith("_")]
    assert len(public) <= 10, public


def test_no_module_calls_a_private_method_of_a_placement():
    """A method another module calls is public: no module of kit or of the plug-ins calls a Placement's `_name`
    (its private helpers are its own), so the count above cannot be met by renaming."""
    import ast
    import glob

    from launcher.backends import registry

    private = set()
    for name in ("local", "ssh", "slurm"):
        for cls in type(registry.placement(name)).__mro__:
            private |= {n for n in vars(cls) if n.startswith("_") and not n.startswith("__")}
    calls = []
    files = glob.glob(os.path.join(REPO, "launcher", "**", "*.py"), recursive=True)
    files += glob.glob(os.path.join(REPO, "tests", "plugins", "**", "*.py"), recursive=True)
    for path in files:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        own = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in private:
                base = node.value
                if not (isinstance(base, ast.Name) and base.id in ("self", "cls", *own)):
                    calls.append(f"{os.path.relpath(path, REPO)}:{node.lineno} .{node.attr}")
    assert not calls, calls


def test_a_plugin_written_to_the_earlier_contract_is_refused_in_one_line(monkeypatch):
    """Its overrides of retired methods would be ignored in silence; the registry names them instead."""
    from launcher.backends import registry
    from launcher.errors import KitError
    from launcher.planning.placement import Placement

    class OldStyle(Placement):
        name = "oldstyle"

        def hosts(self, job, cluster):
            return ()

        def rank_word(self, rank):
            return str(rank)

    monkeypatch.setitem(registry._parts, ("oldstyle", "placement", "PLACEMENT"), OldStyle())
    with pytest.raises(KitError) as got:
        registry.placement("oldstyle")
    assert str(got.value).startswith("backend oldstyle: its Placement defines hosts, rank_word, methods of kit's")
    for name in ("local", "ssh", "slurm"):
        registry.placement(name)   # kit's own backends define none
