"""kit's own doing is never told as the job's (issue 28): when one node fails, the nodes kit stops are marked so
in the record and in `kit status` (their exit code, 143 or 137, is kit's teardown, not the OOM killer's)."""

import json

from tests.launcher.localrun import LOCAL_CLUSTER, kit, write_job


def test_nodes_kit_stopped_are_marked_as_such(tmp_path):
    job = write_job(tmp_path, args=["--out", str(tmp_path), "--fail-rank", "1", "--fail-code", "4",
                                    "--linger", "60"])
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "one-fails", cwd=tmp_path, timeout=180)
    assert r.returncode == 4, r.stderr[-3000:]
    assert "node 1 (localhost) rank 1 exited 4" in r.stderr.strip().splitlines()[-1]
    status = json.loads((tmp_path / "runs" / "one-fails" / "status.json").read_text())
    assert status["stopped_nodes"] == [0] and status["node_exit_codes"][1] != 0, status
    shown = kit("status", "one-fails", cwd=tmp_path)
    line0 = next(ln for ln in shown.stdout.splitlines() if ln.strip().startswith("node 0"))
    line1 = next(ln for ln in shown.stdout.splitlines() if ln.strip().startswith("node 1"))
    assert line0.endswith("(stopped by kit)") and "stopped by kit" not in line1, shown.stdout
    data = json.loads(kit("status", "one-fails", "--json", cwd=tmp_path).stdout)
    assert [n["stopped_by_kit"] for n in data["nodes"]] == [True, False]
