"""kit report of a real restart (issue 39 item 4): a 2-node local run of the training module whose rank 1 gets
SIGKILL after a checkpoint restarts once; the report splits the restart into every named phase, none negative,
adding up to the gap from the failure to the restarted world's first step, on the full path; the record keeps when
kit saw the failure and when every node had ended, and the kill lies between the failure's moment and kit's."""

import json
import os
import signal
import time

import pytest

from launcher.insight.restarts import FROM_TRAINING, PHASES
from tests.launcher.localrun import LOCAL_CLUSTER, kit, kit_background, rank_pids, wait_for
from tests.train.launch import link_reference_module
from tests.train.support import resumable_args, synthetic_rows, write_csv


@pytest.mark.slow
def test_a_killed_ranks_restart_is_reported_phase_by_phase(tmp_path):
    import yaml
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    out = tmp_path / "out"
    args = resumable_args(data, out, tmp_path / "cache", "--max-steps", "60", "--save-every", "10",
                          "--no-save-model", "--log-every", "10")
    link_reference_module(tmp_path)   # the nodes' workdir (kit runs from tmp_path) holds the reference module
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"name": "phases", "entrypoint": {"module": "train"}, "args": args, "nodes": 2,
                                   "procs_per_node": 1, "restarts": 1}))
    proc = kit_background("submit", str(job), "--cluster", LOCAL_CLUSTER, "--run-id", "phased", cwd=tmp_path)
    try:
        ckpts = out / "checkpoints"
        assert wait_for(lambda: ckpts.is_dir() and any(n.startswith("step-") for n in os.listdir(ckpts)),
                        timeout=300), proc.stdout.read() if proc.poll() is not None else "no checkpoint"
        victims = rank_pids("phased", 1)
        assert victims, "rank 1 not found"
        killed = time.time()
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        output, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "attempt 2/2 after" in output, output[-4000:]

    kept = json.loads((tmp_path / "runs" / "phased" / "status.json").read_text())["attempts"][0]
    assert kept["restart"] == "full" and killed <= kept["noticed_at"] <= kept["nodes_ended_at"] <= kept["finished_at"]

    got = json.loads(kit("report", "phased", "--json", cwd=tmp_path).stdout)
    r = got["attempts"][0]["restart"]
    assert r["path"] == "full" and r["to_attempt"] == 2 and r["failure_from"] == FROM_TRAINING, r
    # Every phase on its own (the local backend and the training module record every moment), none negative.
    assert [p["phase"] for p in r["phases"]] == list(PHASES), r
    assert all(p["s"] >= 0 for p in r["phases"]) and r["phases"][-1]["s"] > 0, r
    assert round(sum(p["s"] for p in r["phases"]), 3) == r["gap_s"] > 0, r
    assert r["gap_s"] == got["attempts"][0]["resumed_after_s"]
    # The failure's moment is the last training report before the kill (the next would come within ~0.5 s and a
    # step); detect ends when kit saw node 1 end, stop when every node had, as the record says.
    assert r["failed_at"] <= killed + 1.0, (r["failed_at"], killed)
    by = {p["phase"]: p for p in r["phases"]}
    assert by["detect"]["to"] == round(kept["noticed_at"], 3) and by["stop"]["to"] == round(kept["nodes_ended_at"], 3)
    assert by["restore"]["s"] > 0 and "note" not in by["restore"]   # it resumed from its checkpoint

    text = kit("report", "phased", cwd=tmp_path).stdout
    head = next(ln for ln in text.splitlines() if "restart -> attempt 2" in ln)
    assert head.strip().startswith(f"restart -> attempt 2 (full restart): {r['gap_s']:.2f} s from the failure"), text
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("       ")]
    assert [" ".join(w[:-2]) for w in rows] == list(PHASES), text
    assert f"{sum(float(w[-2]) for w in rows):.2f}" == f"{r['gap_s']:.2f}", text
