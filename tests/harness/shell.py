"""Small process helpers for the harness: run a command and fail loudly, wait for a condition."""

import subprocess
import time


class HarnessError(RuntimeError):
    """The test cluster could not be brought up or torn down; the message says which step and why."""


def sh(argv, check=True, input=None, timeout=30, env=None):
    """Run argv, return stdout; on failure raise with the command and its stderr (never a bare CalledProcessError)."""
    proc = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise HarnessError(f"{' '.join(map(str, argv))} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def wait_until(predicate, what, timeout=20.0, interval=0.05, log=None):
    """Poll predicate until truthy; on timeout raise naming `what` and the tail of the daemon log if one is given."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise HarnessError(f"timed out after {timeout:.0f} s waiting for {what}{log_tail(log)}")
        time.sleep(interval)


def log_tail(path, lines=15):
    """The last lines of a daemon's log, formatted for an error message ('' when there is none)."""
    if path is None:
        return ""
    try:
        text = open(path, errors="replace").read().splitlines()[-lines:]
    except OSError:
        return f" (no log at {path})"
    return f"\n--- {path} ---\n" + "\n".join(text)
