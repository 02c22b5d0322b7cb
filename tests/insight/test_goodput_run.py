"""kit report of a 2-node training run restarted once after a SIGKILL (issue 31 item 2), on the harness's SSH hosts:
two attempts, the work lost since the checkpoint the second resumed from, and a goodput figure this test
recomputes from the record itself (status.json and the training module's lines in the node logs); the PNG is
written."""

import json
import os
import signal

import pytest

from tests.backends.sshrun import leftovers, workdir
from tests.insight.runs import Lines, rank_pids, record_dir, training_run
from tests.launcher.localrun import kit, wait_for

MARK = "kit-insight: "


def _events(record: str) -> list:
    """The main process's events, read here without kit's reader."""
    out = []
    for name in sorted(os.listdir(record)):
        if name.startswith("node") and name.endswith(".log"):
            for line in open(os.path.join(record, name), encoding="utf-8"):
                if f"/rank0] {MARK}" in line:
                    out.append(json.loads(line.split(MARK, 1)[1]))
    return sorted(out, key=lambda e: e["t"])


def _progress_since_save(record: str) -> bool:
    """The main process reported progress after the end of its last checkpoint save: only then has a kill now lost
    work that the record shows (steps are quick and progress is reported every 0.5 s)."""
    try:
        events = _events(record)
    except ValueError:   # a line still being written
        return False
    saves = [e for e in events if e["e"] == "save" and "t1" in e]
    return bool(saves) and any(e["e"] == "progress" and e["t"] > saves[-1]["t1"] for e in events)


def _recomputed(record: str) -> tuple:
    """(training kept, wall): the first attempt's training up to the end of its save of the step the second
    restored, the second's whole loop, less their saves and evaluations; wall from submission to the end."""
    status = json.load(open(os.path.join(record, "status.json")))
    first_end = status["attempts"][0]["finished_at"]
    events = _events(record)
    one, two = [e for e in events if e["t"] <= first_end + 1], [e for e in events if e["t"] > first_end + 1]
    restored = next(e["step"] for e in two if e["e"] == "restore")
    cut = next(e["t1"] for e in one if e["e"] == "save" and e["step"] == restored)
    def training(part, start, until):
        spans = [(e["t0"], e["t1"]) for e in part if e["e"] in ("save", "eval") and start <= e["t0"] < until]
        return (until - start) - sum(min(b, until) - a for a, b in spans)

    kept = 0.0
    for part, until in ((one, cut), (two, next(e["t"] for e in two if e["e"] == "end"))):
        kept += training(part, next(e["t"] for e in part if e["e"] == "train"), until)
    # The first attempt's training was seen up to here, within the attempt: what rank 0 still reported while it was
    # torn down (after the attempt's recorded end; seen in CI under load) is the restart's time, not the attempt's.
    last_seen = min(max(e.get("t1", e["t"]) for e in one), first_end)
    lost = training(one, cut, last_seen)
    return kept, lost, status["finished_at"] - status["created_at"], restored


def test_report_of_a_run_restarted_after_a_sigkill(ssh_hosts, tmp_path):
    n2 = ssh_hosts.hosts[1]
    proc, out = training_run(ssh_hosts, tmp_path, "twice", "--max-steps", "80", "--save-every", "20",
                             "--eval-every", "40", "--log-every", "10", restarts=1)
    lines = Lines(proc)
    try:
        ckpts = out / "checkpoints"
        assert wait_for(lambda: ckpts.is_dir() and any(n.startswith("step-") for n in os.listdir(ckpts)),
                        timeout=300), "\n".join(lines.lines[-20:])
        assert lines.wait_for("[node0/rank0] step 30/80", timeout=120), "\n".join(lines.lines[-20:])
        assert wait_for(lambda: _progress_since_save(record_dir(ssh_hosts, "twice")), timeout=60)
        for pid in rank_pids(n2, 1):
            os.kill(pid, signal.SIGKILL)
        assert proc.wait(timeout=600) == 0, lines.rest(5)[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "kit: run twice attempt 2/2 after: node 1 (n2) rank 1 killed by SIGKILL" in lines.rest(5)
    r = kit("report", "twice", "--json", "--png", str(tmp_path / "twice.png"), cwd=workdir(ssh_hosts))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [a["state"] for a in data["attempts"]] == ["failed", "succeeded"]
    kept, lost, wall, restored = _recomputed(record_dir(ssh_hosts, "twice"))
    first = data["attempts"][0]
    # The steps after the checkpoint it resumed from were redone: from the end of that save to the last progress seen.
    assert first["restored_step"] == restored and first["lost_s"] > 0, first
    assert first["lost_s"] == pytest.approx(lost, abs=0.01), (first, lost)
    assert data["badput"]["progress lost since the last checkpoint"] == pytest.approx(first["lost_s"], abs=0.01)
    assert data["total_s"] == pytest.approx(wall, abs=0.01)
    straggler = data["badput"].get("straggler", 0.0)
    assert data["goodput_s"] + straggler == pytest.approx(kept, abs=0.05)
    assert data["goodput"] == pytest.approx(data["goodput_s"] / wall, abs=1e-3)
    assert sum(data["badput"].values()) + data["goodput_s"] == pytest.approx(wall, abs=0.05)
    assert os.path.getsize(tmp_path / "twice.png") > 10_000
    text = kit("report", "twice", cwd=workdir(ssh_hosts)).stdout
    assert f"goodput {100 * data['goodput']:.1f}% ({data['goodput_s']:.1f} s of training kept" in text, text
    assert f"lost {first['lost_s']:.1f} s of progress since its checkpoint of step {restored}" in text, text
    assert wait_for(lambda: leftovers(ssh_hosts, "twice") == {}, timeout=40)
