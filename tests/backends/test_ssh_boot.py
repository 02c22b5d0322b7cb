"""The host side of an SSH node, run here without SSH: the gate, the checks, and the boot that turns them into the
node's watchdog."""

import glob
import json
import os
import subprocess
import sys

import pytest

from launcher.backends import ssh_preflight
from launcher.backends.ssh_boot import WAITING
from launcher.backends.ssh_gate import GATE_COMMAND
from launcher.plan.build import build_plan
from launcher.spec import Overrides, load_cluster, load_job
from launcher.supervise.watchdog import encode_env


def _host_program(tmp_path, python: str, setup: list) -> tuple:
    """A one-node SSH plan's gate command and check program, and its workdir."""
    work = tmp_path / "work"
    work.mkdir()
    job = tmp_path / "job.yaml"
    job.write_text(json.dumps({"name": "boot", "entrypoint": {"script": "/bin/true"}, "nodes": 1,
                               "procs_per_node": 1}))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(json.dumps({"name": "c", "backend": "ssh", "hosts": [{"name": "n1", "address": "127.0.0.1"}],
                                   "workdir": str(work), "python": python, "setup": setup}))
    spec = load_job(str(job))
    plan = build_plan(spec, load_cluster(str(cluster)), Overrides(), "boot-test")
    return GATE_COMMAND, ssh_preflight._check_text(plan, plan.nodes[0], spec.entrypoint), work


def _pythons() -> dict:
    """kit's own python, and the other Python 3.9+ interpreters this machine has (the host's python is the user's:
    whatever runs their training): the system's, pyenv's. One per version, and only if it starts."""
    pyenv = os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "versions", "*", "bin",
                         "python3")
    found = {}
    for path in [sys.executable, "/usr/bin/python3", *sorted(glob.glob(pyenv))]:
        ask = "import sys; print('%d.%d' % sys.version_info[:2], sys.executable)"
        out = subprocess.run([path, "-c", ask], capture_output=True, text=True) if os.path.exists(path) else None
        if out is not None and out.returncode == 0:
            version, real = out.stdout.split()
            if tuple(map(int, version.split("."))) >= (3, 9):
                found.setdefault(version if path != sys.executable else f"{version}-kit", real)
    return found


PYTHONS = _pythons()


@pytest.mark.parametrize("version", sorted(PYTHONS))
def test_the_host_side_runs_on_the_standard_library_alone_from_the_login_state(tmp_path, version):
    # What a host runs, without SSH: the gate, the checks, `go`, the watchdog, the node's command. The host's
    # python needs nothing kit installs (-S -I: no site-packages, so neither psutil nor kit), and the node starts
    # from the login's environment and directory, not from what the checks' setup lines did to them.
    python = tmp_path / "python-stdlib-only"
    python.write_text(f'#!/bin/sh\nexec {PYTHONS[version]} -S -I "$@"\n')
    python.chmod(0o755)
    setup = ['export FROM_SETUP="x$FROM_SETUP"',
             'if [ -n "$KIT_RUN_ID" ]; then echo "node: $FROM_SETUP $LOGIN_ONLY $SECRET $KIT_LOGIN_DIR"; '
             'echo "came from $OLDPWD"; exit 3; fi']   # OLDPWD: where the node's `cd WORKDIR` started
    gate, text, work = _host_program(tmp_path, str(python), setup)
    login = tmp_path / "home"
    login.mkdir()
    word = b"go\n" + encode_env({"SECRET": "s", "KIT_RUN_ID": "boot-test"})
    env = {"PATH": os.environ["PATH"], "LOGIN_ONLY": "login"}
    # stdin stays open until the end: its EOF would mean kit is gone, and the watchdog would stop the node.
    done = subprocess.Popen(["bash", "--norc", "-c", gate], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, cwd=login, env=env)
    done.stdin.write(text.encode() + b"\0" + word)
    done.stdin.flush()
    lines = done.stdout.read().decode().splitlines()
    assert done.wait(timeout=60) == 3, lines
    done.stdin.close()
    assert lines[:4] == [f"kit-probe:python {PYTHONS[version]}", "kit-probe:port free", "kit-preflight:found",
                         WAITING], lines
    assert lines[4].startswith("kit-node ")
    # The setup line ran once for the node (not on top of the checks' run), with the secret, from the login.
    assert lines[5:] == ["node: x login s ", f"came from {login}"], lines


def test_the_host_side_starts_nothing_without_go(tmp_path):
    gate, text, work = _host_program(tmp_path, sys.executable, ["touch started"])
    done = subprocess.run(["bash", "--norc", "-c", gate], input=text.encode() + b"\0" + b"no\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout.decode().splitlines()[-1] == WAITING
    assert os.listdir(work) == ["started"]  # by the checks' own setup run; the node never ran
