"""A world that never forms ends within timeouts.rendezvous (issue 20), with one line naming the node that could not
reach the master and why, found by checking from that node; nothing of the run is left."""

import time

import pytest
import yaml

from tests.launcher.localrun import kit, pids_of_run, write_job


@pytest.mark.slow
def test_a_local_world_that_never_forms_names_the_node_and_the_cause(tmp_path):
    job = write_job(tmp_path, args=["--out", str(tmp_path)], timeouts={"rendezvous": 6})
    # Node 0 (the master) never gets past its setup: its launcher never listens, node 1 cannot connect. (Its
    # first setup run is kit's preflight, which must pass.)
    cluster = tmp_path / "c.yaml"
    cluster.write_text(yaml.safe_dump({
        "name": "here", "backend": "local", "cpu_threads_per_process": 1, "teardown_grace": 30,
        "setup": ['case "$TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE" in "[node0"*) [ -e checked ] && sleep 300; '
                  'touch checked;; esac']}))
    started = time.monotonic()
    r = kit("submit", job, "--cluster", str(cluster), "--run-id", "never-formed", cwd=tmp_path, timeout=120)
    took = time.monotonic() - started
    assert r.returncode == 124, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: run never-formed failed: node 1 (localhost) never joined: it cannot reach the "
                           "master 127.0.0.1:") and "(connection refused)" in line, line
    assert "check routes and firewalls between the nodes, or run kit doctor" in line
    assert took < 6 + 30, took
    left = pids_of_run("never-formed")
    assert left == [], [open(f"/proc/{p}/cmdline").read() for p in left]
    status = kit("status", "never-formed", cwd=tmp_path)
    assert "state failed" in status.stdout and "never joined" in status.stdout, status.stdout
