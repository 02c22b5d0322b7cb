"""The SSH backend costs nothing until it is used: help and SSH dry-runs import neither paramiko nor the backend
(its placement, which plans, is light)."""

import subprocess
import sys

from tests.launcher.localrun import REPO

CHECK = """
import sys
from launcher.cli import main
main(sys.argv[1:])
heavy = sorted(m for m in ("paramiko", "launcher.backends.ssh.backend", "launcher.transport.ssh", "torch")
               if m in sys.modules)
print("HEAVY", heavy, file=sys.stderr)
"""


def _heavy(*argv):
    r = subprocess.run([sys.executable, "-c", CHECK, *argv], cwd=REPO, capture_output=True, text=True, timeout=60)
    return r.returncode, r.stderr.strip().splitlines()[-1]


def test_ssh_dry_run_stays_light():
    code, heavy = _heavy("submit", "jobs/bert_cls.yaml", "--cluster", "cluster_configs/ssh.example.yaml",
                         "--dry-run")
    assert (code, heavy) == (0, "HEAVY []")


def test_doctor_help_stays_light():
    r = subprocess.run([sys.executable, "-m", "launcher", "doctor", "--help"], cwd=REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "--cluster" in r.stdout
