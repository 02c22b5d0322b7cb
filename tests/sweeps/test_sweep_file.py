"""A malformed sweep.json (issue 29): one warning line naming the file in a listing, which goes on; one line,
exit 2, for a command about that sweep; never a traceback."""

import json

import pytest

from tests.launcher.localrun import kit

BAD = {
    "not json": '{"sweep_id": "s", "trials": [',
    "trials a string": json.dumps({"sweep_id": "s", "trials": "x"}),
    "trial without index": json.dumps({"sweep_id": "s", "trials": [{"run_id": "s-t0"}]}),
    "run id with a slash": json.dumps({"sweep_id": "s", "trials": [{"index": 0, "run_id": "../../etc"}]}),
    "pid a string": json.dumps({"sweep_id": "s", "trials": [], "driver_pid": "1; rm -rf /"}),
    "a list": "[1, 2]",
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_malformed_sweep_file_costs_one_line(tmp_path, case):
    root = tmp_path / "runs"
    (root / "bad").mkdir(parents=True)
    (root / "bad" / "sweep.json").write_text(BAD[case])
    (root / "good").mkdir()
    (root / "good" / "status.json").write_text(json.dumps({"run_id": "good", "backend": "local",
                                                           "state": "succeeded", "exit_code": 0}))
    listing = kit("runs", "--run-root", str(root), cwd=tmp_path, timeout=60)
    assert listing.returncode == 0 and "good" in listing.stdout, listing.stderr
    warnings = [ln for ln in listing.stderr.splitlines() if ln.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("kit: warning: sweep record ") and "sweep.json is " \
        "unreadable" in warnings[0], listing.stderr
    for argv in (("sweep", "status", "bad"), ("status", "bad")):
        r = kit(*argv, "--run-root", str(root), cwd=tmp_path, timeout=60)
        assert r.returncode == 74 and "Traceback" not in r.stderr, (argv, r.stderr)   # a record problem (issue 36)
        assert r.stderr.strip().splitlines()[-1].startswith("kit: error: sweep record "), r.stderr
