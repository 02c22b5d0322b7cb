"""One login and one Python start per host: the node's launch channel runs the checks and then becomes the node.

The login shell execs a small bash (the gate) that runs the check program: the node's own preamble (cd, setup
lines, environment), then its python with the probe, the entrypoint check and ssh_boot.BOOT_SOURCE. The checks
print their results and the program waits for kit's word. Only when every host passed does kit write `go`; the
same process then becomes the node's watchdog (ssh_boot.py). Anything else, or the channel closing, ends it
having started nothing. Each login's shell start, each Python start and each small process costs CPU on the
host; on a fan-out to many hosts that work, not the network, sets the time to start (bench/ssh_fanout.py).
"""

import shlex

from launcher.backends.ssh_boot import WAITING
from launcher.preflight.entrypoint import CheckResult
from launcher.supervise.ssh_node import CHECK_STDERR

ERR = CHECK_STDERR.decode()
# The gate reads the check program's text from the channel's stdin, up to a NUL byte (shell text holds none; bash
# reads a pipe a byte at a time, so nothing after it is consumed): the login can then be opened before kit has
# built the plan (ssh_early.py), and the program is sent once the plan is built and validated. The channel
# closing first ends the gate having run nothing.
# The check's stderr comes back on the one stream of the channel, each line marked; its stdout unmarked.
# `1>&3` first keeps its stdout out of the pipe that marks its stderr. The gate shell stays as the check
# program's parent: the program reads the login's environment and directory from it (ssh_boot.py).
_GATE = ("IFS= read -r -d '' check || exit 0; "
         '{ bash --norc -c "$check" 2>&1 1>&3 3>&- | sed -u "s/^/' + ERR + '/"; exit "${PIPESTATUS[0]}"; } 3>&1')
# --norc: the login shell that runs this has sourced ~/.bashrc already (its environment is inherited); a
# bash it execs would source it again (bash does so under sshd), ~0.1 s of CPU more per host.
GATE_COMMAND = "bash --norc -c " + shlex.quote(_GATE)


def gate_input(check_text: str) -> bytes:
    """What the gate reads first on its stdin: the check program's text, ended by NUL."""
    return check_text.encode() + b"\0"


def read_checks(chan, timeout: float) -> tuple[CheckResult, bytes, bool]:
    """The check's result: (its exit status, or 0 while it waits for `go`; stdout; stderr), whatever bytes came
    after it said it waits, and whether it waits (False: it ended, and the status is its exit status)."""
    chan.settimeout(timeout)
    buf, out, err, waiting = b"", [], [], False
    while not waiting:
        chunk = chan.recv(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf and not waiting:
            raw, buf = buf.split(b"\n", 1)
            line = raw.decode(errors="replace")
            if line == WAITING:
                waiting = True
            elif line.startswith(ERR):
                err.append(line[len(ERR):])
            else:
                out.append(line)
    if not waiting:
        err.append(buf.decode(errors="replace"))
        buf = b""
    code = 0 if waiting else chan.recv_exit_status()
    chan.settimeout(None)
    return CheckResult(255 if code < 0 else code, _text(out), _text(err)), buf, waiting


def _text(lines: list) -> str:
    return "".join(line + "\n" for line in lines if line)
