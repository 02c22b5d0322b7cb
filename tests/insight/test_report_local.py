"""kit report of a job that is not the training module (a probe script on the local backend): what kit saw, its
start until the world formed, then running, and no goodput figure; an unknown run is one line."""

import json

from tests.launcher.localrun import LOCAL_CLUSTER, kit, write_job


def test_a_job_that_reports_nothing_gets_what_kit_saw(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "3"])
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "plain", cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(kit("report", "plain", "--json", cwd=tmp_path).stdout)
    assert got["goodput"] is None and got["goodput_s"] is None and got["time_to_first_step_s"] is None
    assert set(got["badput"]) == {"start-up and imports", "running (not reported)"}, got["badput"]
    assert abs(sum(got["badput"].values()) - got["total_s"]) < 0.05
    assert "world formed" in [e["event"] for e in got["timeline"]]
    text = kit("report", "plain", cwd=tmp_path).stdout
    assert "goodput: unknown (the job reports no training steps" in text
    import launcher as kit_api   # the API's Run.report() is the same core (core/report.py)
    from_api = kit_api.get_run("plain").report(png=str(tmp_path / "t.png"))
    assert from_api["badput"].keys() == got["badput"].keys() and from_api["total_s"] == got["total_s"]
    assert (tmp_path / "t.png").stat().st_size > 0
    missing = kit("report", "nope", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "kit: error: run nope" in missing.stderr
