"""A full disk on an SSH host (issue 29): the rank's exit code still reaches kit (it travels in the launcher's
report over the node's channel, not in a file on that disk), and the failure line says the disk is full instead
of passing off a line cut short, or one said long before, as the rank's last words. Hosts with disks of their own
(4 MiB tmpfs each)."""

import json
import os
import subprocess
import sys

import yaml

from tests.backends.sshrun import cluster, leftovers
from tests.harness.disks import own_disks
from tests.launcher.localrun import REPO

SCRIPTS = os.path.join(REPO, "tests", "launcher", "scripts")


def test_a_rank_that_fills_its_hosts_disk_is_told_with_its_code(ssh_hosts, tmp_path):
    bed = ssh_hosts.bed
    with own_disks(bed, bed.hosts, {"workdir": bed.path("own", "work")}, size="4m") as disks:
        job = tmp_path / "job.yaml"
        job.write_text(yaml.safe_dump({"name": "full", "entrypoint": {"script": "disk_filler.py"}, "nodes": 2,
                                       "procs_per_node": 1, "args": ["--rank", "1", "--code", "7"]}))
        cfg = cluster(ssh_hosts, tmp_path, workdir=disks.paths["workdir"],
                      sync={"source": SCRIPTS, "include": ["disk_filler.py"]})
        r = subprocess.run([sys.executable, "-m", "launcher", "submit", str(job), "--cluster", cfg, "--run-id",
                            "full-host"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 7, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"kit: run full-host failed: node 1 (n2) rank 1 exited 7: the disk of "
                           f"n2:{disks.paths['workdir']} is full ("), line
    assert "the last line seen: filler rank 1 starting" in line, line
    status = json.loads((tmp_path / "runs" / "full-host" / "status.json").read_text())
    assert status["exit_code"] == 7 and "is full" in status["failure"]["last_line"]
    assert leftovers(ssh_hosts, "full-host") == {}
