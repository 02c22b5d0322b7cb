"""One login and one Python start per host: the node's launch channel runs the checks and then becomes the node.

The login shell execs a small bash (the gate) that runs the check program in itself: the node's own preamble
(cd, setup lines, environment), then its python with the probe, the entrypoint check and the boot (boot.py).
The checks print their results and the program waits for kit's word. Only when every host passed does kit write
`go`; the same process then becomes the node's watchdog (boot.py). Anything else, or the channel closing,
ends it having started nothing. Each login's shell start, each Python start and each small process costs CPU on
the host; on a fan-out to many hosts that work, not the network, sets the time to start (bench/ssh_fanout.py):
so no shell or filter between the gate and the check's python.
"""

import shlex

# Nothing of kit is imported at the top: the early logins' threads take GATE_COMMAND from here, and a thread that
# imports kit's modules while the main thread does can deadlock on their package locks (ssh/early.py).

# The gate reads the check's shell text from the channel's stdin, up to a NUL byte (shell text holds none; bash
# reads a pipe a byte at a time, so nothing after it is consumed): the login can then be opened before kit has
# built the plan (ssh/early.py), and the text is sent once the plan is built and validated. The channel
# closing first ends the gate having run nothing. The Python program (probe, checks, boot, the watchdog's
# source: ~15 KB) follows the NUL and is read by a small loader in the check's python, in a few reads: bash's
# byte-at-a-time read of it cost ~5 ms per host after the login, on the way to every node's start.
# stderr joins stdout, so the checks' output comes back in the order it was written; kit tells the checks'
# results by their markers (read_checks). The gate shell runs the program itself (eval, no second bash) and
# stays the check python's parent: the program takes the login's environment from it and the login's working
# directory from KIT_LOGIN_DIR (boot.py), as the node's preamble changes both. The channel moves to fd 3 and the
# preamble's stdin is /dev/null, as a local node's is: a setup line that reads stdin gets EOF instead of the
# program's bytes (which would leave the checks waiting); the check's python takes the channel back (CHANNEL).
_GATE = 'IFS= read -r -d \'\' check || exit 0; exec 2>&1 3<&0 </dev/null; export KIT_LOGIN_DIR="$PWD"; eval "$check"'
# How the check's python gets the channel back as its stdin (the gate moved it to fd 3).
CHANNEL = "0<&3 3<&-"
# --norc: the login shell that runs this has sourced ~/.bashrc already (its environment is inherited); a
# bash it execs would source it again (bash does so under sshd), ~0.1 s of CPU more per host.
GATE_COMMAND = "bash --norc -c " + shlex.quote(_GATE)


# The check's python runs this (`python -c LOADER SIZE ARGS...`): it reads the program of SIZE bytes that follows
# the shell text on stdin, exactly (os.read: kit's `go` may follow, for the program to read), and runs it with
# ARGS as its sys.argv[1:]. A short read (the channel closed) starts nothing.
LOADER = """import os, sys
size, program = int(sys.argv.pop(1)), b""
while len(program) < size:
    chunk = os.read(0, size - len(program))
    if not chunk:
        os._exit(1)
    program += chunk
exec(compile(program, "<kit-check>", "exec"))
"""


def gate_input(shell_text: str, program: bytes) -> bytes:
    """What the gate reads on its stdin: the check's shell text (which starts LOADER with the program's size),
    ended by NUL, then the program."""
    return shell_text.encode() + b"\0" + program


def read_checks(chan, timeout: float, markers: tuple) -> tuple:
    """The check's result, a CheckResult (its exit status, or 0 while it waits for `go`; its output; its output less
    the lines that hold one of `markers`, for messages), whatever bytes came after it said it waits, and
    whether it waits (False: it ended, and the status is its exit status)."""
    from launcher.backends.ssh.boot import WAITING
    from launcher.preflight.entrypoint import CheckResult

    chan.settimeout(timeout)
    lines: list[str] = []
    buf, waiting = b"", False
    while not waiting:
        try:
            chunk = chan.recv(65536)
        except TimeoutError:  # socket.timeout: say how far the checks got
            raise ChecksTimedOut(timeout, lines + [buf.decode(errors="replace")]) from None
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf and not waiting:
            raw, buf = buf.split(b"\n", 1)
            line = raw.decode(errors="replace")
            waiting = line.endswith(WAITING)  # text the host printed without a newline may start it
            if not waiting:
                lines.append(line)
    if not waiting:
        lines.append(buf.decode(errors="replace"))
        buf = b""
    code = 0 if waiting else chan.recv_exit_status()
    chan.settimeout(None)
    said = [line for line in lines if not any(m in line for m in markers)]
    return CheckResult(255 if code < 0 else code, _text(lines), _text(said)), buf, waiting


class ChecksTimedOut(Exception):
    """The checks said nothing more for `timeout` seconds; `lines`: what they had said."""

    def __init__(self, timeout: float, lines: list):
        super().__init__(f"no answer for {timeout:.0f} s")
        self.timeout, self.lines = timeout, [ln for ln in lines if ln.strip()]


def _text(lines: list) -> str:
    return "".join(line + "\n" for line in lines if line)
