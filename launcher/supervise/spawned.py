"""A kit process that goes on without its caller (a detached run's supervisor, a detached sweep's driver): a fresh
interpreter in a session of its own, its output appended to a console file, its inputs pickled on its stdin.

Spawned, not forked: the caller may be any Python program (a notebook with threads and sockets); a fresh
interpreter inherits none of that. The inputs travel on stdin because they may hold secret values that no file or
command line may carry. start() returns before the child has them, so that the caller records the child's pid
first (until then it writes nothing, and the two never race on a record); hand_over() gives them."""

import os
import pickle
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(entry: str, console: str, cwd: str) -> subprocess.Popen:
    """Start `entry` ("package.module:function" of kit's, called without arguments) with its stdout and stderr
    appended to the file `console`, kit's lines logged there (launcher/logs.py: every line, and the debug ones
    when this process shows them). The child finds kit where this process found it, without a PYTHONPATH that
    the nodes would inherit. OSError when it cannot start."""
    from launcher.logs import child_level

    module, function = entry.split(":")
    child = (
        f"import sys; sys.path.insert(0, {ROOT!r}); from launcher.logs import setup_console; "
        f"setup_console({child_level()}); from {module} import {function}; {function}()"
    )
    out = os.open(console, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        return subprocess.Popen(
            [sys.executable, "-c", child],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=out,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(out)


def hand_over(proc: subprocess.Popen, inputs) -> None:
    """Give the child its inputs (pickled on its stdin, which then closes); a child that died at once takes none
    (its console says why). The child is reaped in a thread of this process."""
    try:
        assert proc.stdin is not None
        proc.stdin.write(pickle.dumps(inputs))
        proc.stdin.close()
    except OSError:
        pass
    reap_later(proc)


def inputs():
    """In the child: the inputs hand_over() gave, and stdin from /dev/null after them."""
    data = pickle.load(sys.stdin.buffer)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    return data


def reap_later(proc) -> None:
    """Wait for a spawned process in a daemon thread: a long-lived caller (a notebook) collects no zombies, and
    one that exits at once leaves the child to init."""
    threading.Thread(target=proc.wait, daemon=True, name=f"kit-reap-{proc.pid}").start()
