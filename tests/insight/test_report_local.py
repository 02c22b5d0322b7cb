"""kit report of a job that is not the training module (a probe script on the local backend): what kit saw (its
start, the world formed, the end), no goodput figure and its time after the world formed outside badput, with how
a job reports its training; an unknown run is one line."""

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
    # Its time after the world formed is not known to be wasted: not badput, a line of its own.
    assert set(got["badput"]) == {"start-up and imports"} and got["unreported_s"] > 0, got
    assert abs(sum(got["badput"].values()) + got["unreported_s"] - got["total_s"]) < 0.05
    assert "world formed" in [e["event"] for e in got["timeline"]]
    text = kit("report", "plain", cwd=tmp_path).stdout
    lines = text.splitlines()
    assert lines[1] == "goodput: unknown: the job did not tell kit when it trained (see the end); what kit saw:"
    seen = [ln.split(" s  ", 1)[1] for ln in lines[2:lines.index(next(ln for ln in lines if ln.startswith("badput")))]]
    assert seen == ["submitted", "attempt 1 started", "world formed", "attempt 1 ended: succeeded",
                    "end: succeeded"], text
    badput = lines.index(next(ln for ln in lines if ln.startswith("badput")))
    assert lines[badput + 1].startswith("  start-up and imports ") and lines[badput + 2].startswith(
        "not reported by the job ") and lines[badput + 2].endswith("(neither goodput nor badput)"), text
    # How a job's own script reports its training, in kit's words, not a path into kit's source.
    assert 'kit-insight: {"e": "train", "t": SECONDS}' in text and "train/" not in text
    import launcher as kit_api   # the API's Run.report() is the same core (core/report.py)
    from_api = kit_api.get_run("plain").report(png=str(tmp_path / "t.png"))
    assert from_api["badput"].keys() == got["badput"].keys() and from_api["total_s"] == got["total_s"]
    assert (tmp_path / "t.png").stat().st_size > 0
    missing = kit("report", "nope", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "kit: error: run nope" in missing.stderr


def test_a_users_script_that_prints_the_two_lines_the_report_names_gets_goodput(tmp_path):
    """The contract the report gives a job that reports nothing, followed by a script of the user's own."""
    script = tmp_path / "mine.py"
    script.write_text("import json, time\n"
                      "def say(e): print('kit-insight: ' + json.dumps({'e': e, 't': time.time()}), flush=True)\n"
                      "say('train')\ntime.sleep(2)\nsay('end')\n")
    job = tmp_path / "mine.yaml"
    job.write_text(json.dumps({"name": "mine", "entrypoint": {"script": str(script)}, "nodes": 1,
                               "procs_per_node": 1}))
    r = kit("submit", str(job), "--cluster", LOCAL_CLUSTER, "--run-id", "mine", cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "kit-insight" not in r.stdout   # kept off the console
    got = json.loads(kit("report", "mine", "--json", cwd=tmp_path).stdout)
    assert got["goodput_s"] >= 2 and got["unreported_s"] == 0, got
    assert "for goodput, have the job" not in kit("report", "mine", cwd=tmp_path).stdout
