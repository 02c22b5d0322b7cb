"""Host health from the records (insight/health.py) and the planner's use of it (planning/health.py): the failures
a host caused, with run ids and dates; a host that caused one in one of its last two runs is avoided, until it has
run twice more or `kit hosts --clear` forgave it; an SSH run's node moves to a healthy spare (said in the plan's
notes, the dry-run too); a SLURM cluster with exclude_failed_nodes renders --exclude."""

import json
import os

from launcher import run_index
from launcher.insight.health import clear, failed_hosts, ledger, suspect
from launcher.records import write_atomic
from launcher.status import Failure, NodeStatus, RunStatus
from tests.launcher.localrun import kit
from tests.launcher.planning import SLURM_GPU, cluster, job, plan

SSH3 = {"name": "three", "backend": "ssh", "gpus_per_node": 0, "procs_per_node": 1, "workdir": "/srv/kit",
        "hosts": [{"name": "n1"}, {"name": "n2"}, {"name": "n1-spare"}], "ssh": {"user": "train"}}


def _record(root, run_id, at, hosts, failure=None, attempts=(), backend="ssh"):
    status = RunStatus(run_id=run_id, job="j", backend=backend, state="failed" if failure else "succeeded",
                       created_at=at, finished_at=at + 10, failure=failure, attempts=tuple(attempts),
                       nodes=tuple(NodeStatus(rank=i, host=h) for i, h in enumerate(hosts)))
    path = os.path.join(root, run_id)
    write_atomic(os.path.join(path, "status.json"), json.dumps(status.to_json()))
    run_index.remember(path)


def _lost(host):
    return Failure(node=1, host=host, rank=None, code=255, meaning="lost", last_line="no answer for 4 s")


def test_the_ledger_names_each_hosts_failures_and_recent_ones_are_avoided(tmp_path):
    root = str(tmp_path / "runs")
    _record(root, "a", 100.0, ["n1", "n2"], _lost("n2"))
    _record(root, "b", 200.0, ["n1", "n3"])
    killed = {"attempt": 1, "finished_at": 305.0, "host": "n3", "meaning": "killed by SIGKILL",
              "cause": "node 1 (n3) rank 1 killed by SIGKILL (exit code 137)", "state": "failed"}
    _record(root, "c", 300.0, ["n1", "n4"], attempts=[killed])
    _record(root, "d", 400.0, ["n1", "n4"], Failure(0, "n1", 0, 4, "bad data", "row 7"))   # the job's own
    book = ledger()
    assert [f.run_id for f in book["n2"].failures] == ["a"] and book["n2"].runs == [(100.0, "a")]
    assert [(f.run_id, f.attempt) for f in book["n3"].failures] == [("c", 1)]
    assert book["n1"].failures == [] and len(book["n1"].runs) == 4
    assert dict(failed_hosts("ssh", ["n1", "n2", "n3", "n4"])).keys() == {"n2", "n3"}
    assert "failed in run a (lost, " in dict(failed_hosts("ssh", ["n2"]))["n2"]
    _record(root, "e", 500.0, ["n2", "n1"])
    assert suspect(ledger()["n2"]) is not None   # one of its last two runs still failed
    _record(root, "f", 600.0, ["n2", "n1"])
    assert suspect(ledger()["n2"]) is None       # two good runs since
    clear("n3", now=700.0)
    assert failed_hosts("ssh", ["n3"]) == ()


def test_an_ssh_plan_moves_a_failed_hosts_node_to_a_spare_and_says_so():
    why = "failed in run a (lost, 2026-12-06 22:40)"
    p = plan(job(nodes=2, gpus_per_node=0), cluster(SSH3), failed_hosts=(("n2", why),))
    assert [n.host for n in p.nodes] == ["n1", "n1-spare"] and p.spare_hosts == (("n2", "n2"),)
    assert p.notes == (f"host n2 {why}; its node goes to spare host n1-spare (kit hosts --clear n2 to use it "
                       f"again)",)
    full = plan(job(nodes=3, gpus_per_node=0), cluster(SSH3), failed_hosts=(("n2", why),))
    assert [n.host for n in full.nodes] == ["n1", "n2", "n1-spare"] and "no healthy spare" in full.notes[0]
    assert [n.host for n in plan(job(nodes=2, gpus_per_node=0), cluster(SSH3)).nodes] == ["n1", "n2"]


def test_a_slurm_cluster_excludes_failed_nodes_when_asked():
    why = (("n2", "failed in run a (lost, 2026-12-06 22:40)"),)
    asked = cluster(SLURM_GPU, slurm={**SLURM_GPU["slurm"], "exclude_failed_nodes": True, "exclude": ["n9"]})
    script = plan(job(nodes=2), asked, failed_hosts=why).files["runs/test-run/job.sbatch"]
    assert "#SBATCH --exclude=n2,n9" in script.splitlines()
    assert plan(job(nodes=2), asked, failed_hosts=why).notes[0].startswith("excluded from the allocation")
    plain = plan(job(nodes=2), cluster(SLURM_GPU), failed_hosts=why)
    assert "--exclude" not in plain.files["runs/test-run/job.sbatch"] and plain.notes == ()


def test_kit_hosts_lists_and_clears_and_the_dry_run_shows_the_move(tmp_path):
    root = str(tmp_path / "runs")
    _record(root, "lost-one", 100.0, ["n1", "n2"], _lost("n2"))
    shown = kit("hosts", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["HOST", "BACKEND", "RUNS", "FAILURES", "STATE"]
    assert lines[2].split()[:5] == ["n2", "ssh", "1", "1", "avoided:"] and "run lost-one" in lines[2]
    assert "run lost-one attempt 1: node 1 (n2) lost: no answer for 4 s" in lines[3]
    cfg = tmp_path / "three.yaml"
    cfg.write_text(json.dumps(SSH3))
    jobfile = tmp_path / "job.yaml"
    jobfile.write_text(json.dumps({"name": "j", "entrypoint": {"module": "train"}, "nodes": 2}))
    dry = kit("submit", str(jobfile), "--cluster", str(cfg), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "host health: host n2 failed in run lost-one (lost, " in dry.stdout
    assert "<host> of node i is the i-th of (from node 0): n1, n1-spare\n" in dry.stdout
    assert kit("hosts", "--clear", "n2", cwd=tmp_path).returncode == 0
    assert "ok" in kit("hosts", cwd=tmp_path).stdout.splitlines()[2]
    again = kit("submit", str(jobfile), "--cluster", str(cfg), "--dry-run", cwd=tmp_path)
    assert "host health" not in again.stdout and "(from node 0): n[1-2]\n" in again.stdout
    bad = kit("hosts", "--clear", "nope", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("kit: error: --clear nope: no run of yours used")


def test_the_words_are_the_records():
    from launcher import status
    from launcher.insight import health
    assert (health.LOST, health.NEVER_JOINED, health.HUNG) == (status.LOST, status.NEVER_JOINED, status.HUNG)


def test_records_kit_does_not_trust_say_nothing_about_a_host(tmp_path):
    """A record another user could have written (here: group-writable, as launcher/trust.py judges it) is not
    counted: a planted failure must not steer placement away from a good host."""
    root = str(tmp_path / "runs")
    _record(root, "planted", 100.0, ["n1", "n2"], _lost("n2"))
    _record(root, "mine", 200.0, ["n1", "n3"], _lost("n3"))
    os.chmod(os.path.join(root, "planted", "status.json"), 0o664)
    book = ledger()
    assert "n2" not in book and [f.run_id for f in book["n3"].failures] == ["mine"]
    assert dict(failed_hosts("ssh", ["n1", "n2", "n3"])).keys() == {"n3"}


def test_the_api_faces_the_same_core(tmp_path):
    import launcher as kit_api
    root = str(tmp_path / "runs")
    _record(root, "lost-one", 100.0, ["n1", "n2"], _lost("n2"))
    rows = {r["host"]: r for r in kit_api.hosts()}
    assert rows["n2"]["avoided"] and rows["n2"]["failures"][0]["run_id"] == "lost-one" and not rows["n1"]["avoided"]
    assert not {r["host"]: r for r in kit_api.hosts(clear="n2")}["n2"]["avoided"]


def test_a_hosts_file_that_is_not_kits_costs_a_warning_and_is_never_written_over(tmp_path, capsys):
    import pytest
    from launcher.errors import KitError
    from launcher.insight.health import cleared
    path = os.path.join(run_index.kit_home(), "hosts.json")
    os.makedirs(run_index.kit_home(), exist_ok=True)
    for text in ("[1, 2]", "{not json", '{"cleared": {"n1": true}}'):
        with open(path, "w") as f:
            f.write(text)
        if text.startswith('{"cleared"'):
            assert cleared() == {}   # true is not a time
            continue
        assert cleared() == {} and "is unreadable" in capsys.readouterr().err
        with pytest.raises(KitError, match="fix or remove it"):
            clear("n2")
        assert open(path).read() == text
