"""Helpers for the sweep tests: sweep job files, sweep records, the trials' processes."""

import json
import os

import yaml

from tests.launcher.localrun import kit, pids_of_run  # noqa: F401  (re-exported for the tests)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "tests", "sweeps", "scripts", "metric_probe.py")
LOCAL_CLUSTER = os.path.join(REPO, "cluster_configs", "local.yaml")


def probe_job(tmp_path, sweep: dict, args=(), name="probe", **fields) -> str:
    """A one-process job of the metric probe (no torch: a trial costs accelerate's launcher only)."""
    job = {"name": name, "entrypoint": {"script": PROBE}, "args": list(args), "nodes": 1, "procs_per_node": 1,
           "sweep": {"method": "grid", "metric": "score", "goal": "max", **sweep}, **fields}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return str(path)


def sweep_ids(run_root) -> list[str]:
    if not os.path.isdir(run_root):
        return []
    return sorted(n for n in os.listdir(run_root) if os.path.isfile(os.path.join(run_root, n, "sweep.json")))


def sweep_json(run_root, sweep_id) -> dict:
    return json.load(open(os.path.join(run_root, sweep_id, "sweep.json")))


def status_json(cwd, sweep_id=None, *extra) -> dict:
    r = kit("sweep", "status", *([sweep_id] if sweep_id else []), "--format", "json", *extra, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def trial_leftovers(sweep_id: str, n: int) -> dict:
    """Every process on this machine that still carries one of the sweep's trial run ids."""
    return {f"{sweep_id}-t{i}": pids for i in range(n) if (pids := pids_of_run(f"{sweep_id}-t{i}"))}
