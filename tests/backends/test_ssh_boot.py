"""The host side of an SSH node, run here without SSH: the gate, the checks, and the boot that turns them into the
node's watchdog."""

import glob
import json
import os
import subprocess
import sys

import pytest

from launcher.backends.ssh import preflight as ssh_preflight
from launcher.backends.ssh.boot import WAITING, boot_source
from launcher.backends.ssh.gate import GATE_COMMAND
from launcher.planning.build import build_plan
from launcher.spec import Overrides, load_cluster, load_job
from launcher.supervise.watchdog import encode_env


def _host_program(tmp_path, python: str, setup: list) -> tuple:
    """A one-node SSH plan's gate command, what its launch channel is sent first, and its workdir."""
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
    return GATE_COMMAND, ssh_preflight.check_input(plan, plan.nodes[0], spec.entrypoint), work


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
    gate, sent, work = _host_program(tmp_path, str(python), setup)
    login = tmp_path / "home"
    login.mkdir()
    word = b"go\n" + encode_env({"SECRET": "s", "KIT_RUN_ID": "boot-test"})
    env = {"PATH": os.environ["PATH"], "LOGIN_ONLY": "login"}
    # stdin stays open until the end: its EOF would mean kit is gone, and the watchdog would stop the node.
    done = subprocess.Popen(["bash", "--norc", "-c", gate], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, cwd=login, env=env)
    done.stdin.write(sent + word)
    done.stdin.flush()
    lines = done.stdout.read().decode().splitlines()
    assert done.wait(timeout=60) == 3, lines
    done.stdin.close()
    # A python without site-packages has neither torch nor accelerate: the probe says so (kit refuses the run on
    # those lines; here, without kit, the gate goes on to show the rest runs on the standard library alone).
    missing = [line for line in lines if line.startswith("kit-probe:missing ")]
    assert missing and all("has no module" in line for line in missing), lines
    lines = [line for line in lines if line not in missing]
    assert lines[:4] == [f"kit-probe:python {PYTHONS[version]}", "kit-probe:port free", "kit-preflight:found",
                         WAITING], lines
    assert lines[4].startswith("kit-node ")
    # The setup line ran once for the node (not on top of the checks' run), with the secret, from the login.
    assert lines[5:] == ["node: x login s ", f"came from {login}"], lines


def test_the_host_side_starts_nothing_without_go(tmp_path):
    gate, sent, work = _host_program(tmp_path, sys.executable, ["touch started"])
    done = subprocess.run(["bash", "--norc", "-c", gate], input=sent + b"no\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout.decode().splitlines()[-1] == WAITING
    assert os.listdir(work) == ["started"]  # by the checks' own setup run; the node never ran


def test_the_gate_reads_only_the_shell_text_and_the_loader_the_rest(tmp_path):
    # bash reads a pipe a byte at a time: the ~15 KB program (the watchdog's source in it) must not be in the text
    # it reads, but after the NUL, for the check's python to read whole.
    gate, sent, work = _host_program(tmp_path, sys.executable, [])
    text, program = sent.split(b"\0", 1)
    assert boot_source().encode() in program and b"def proc_stat" not in text
    # Its size apart from the paths in it (the test's directory and the interpreter, longer on some machines):
    # the node's own command (~2.5 KB on a CPU node with one process: its cores counted, its interface chosen, the
    # variables accelerate's launcher would set given directly) and the gate's lines.
    bare = text.replace(str(tmp_path).encode(), b"T").replace(sys.executable.encode(), b"P")
    assert len(bare) < 3600 and f" {len(program)} ".encode() in text


def test_a_program_cut_short_starts_nothing(tmp_path):
    # The channel closing while the program is on its way (kit gone): the loader ends, nothing ran.
    gate, sent, work = _host_program(tmp_path, sys.executable, [])
    text, program = sent.split(b"\0", 1)
    done = subprocess.run(["bash", "--norc", "-c", gate], input=text + b"\0" + program[:len(program) // 2],
                          capture_output=True, timeout=60)
    assert done.returncode == 1 and done.stdout == b"", done
    assert os.listdir(work) == []
