"""A short local shell (the checks before a run, a look at the master from this machine) that leaves nothing behind:
it runs in its own process group, and a timeout or a Ctrl-C kills the whole group (a setup line's `sleep`, a
`module load` it started), not only bash."""

from __future__ import annotations

import os
import signal
import subprocess


def run_bounded(command: str, cwd: str, env: dict, timeout: float) -> subprocess.CompletedProcess:
    """`bash -c command` with stdin /dev/null; raises subprocess.TimeoutExpired after `timeout` seconds."""
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:  # the timeout, or the user's Ctrl-C: nothing of the check may outlive kit
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
