"""One login per host: the node's launch channel first runs the preflight checks, then waits for kit's word.

kit opens the channel, reads each check's stdout, stderr and exit status, and only when every host passed does it
write `go PYTHON`; then the shell execs the watchdog (ssh_node.launch_text) on the same channel. Anything else,
or the channel closing, ends the shell having started nothing. Logging in once instead of twice halves the
remote login-shell starts, which dominate fan-out time.
"""

import shlex

from launcher.preflight.entrypoint import CheckResult
from launcher.supervise.ssh_node import launch_text

SPLIT = "kit-gate-split"
ERR = "kit-stderr: "
# A check's stderr comes back on the one stream of the channel, each line marked; its stdout unmarked; then its
# status. `1>&3` first keeps the check's stdout out of the pipe that marks its stderr.
_RUN = ('kit_run() { { bash -c "$1" 2>&1 1>&3 3>&- | sed -u "s/^/' + ERR + '/"; kit_s=${PIPESTATUS[0]}; } 3>&1; '
        'printf "\\n' + SPLIT + ' %s\\n" "$kit_s"; }')


def gate_text(checks: list, watchdog: str, grace: float, command: str) -> str:
    lines = [_RUN, *(f"kit_run {shlex.quote(t)}" for t in checks),
             "read -r kit_go kit_python || exit 0",
             '[ "$kit_go" = go ] || exit 0',
             launch_text('"$kit_python"', watchdog, grace, command)]
    # --norc: the login shell that runs this has sourced ~/.bashrc already (its environment is inherited); a
    # bash it execs would source it again (bash does so under sshd), ~0.1 s of CPU more per host.
    return "bash --norc -c " + shlex.quote("\n".join(lines) + "\n")


def read_checks(chan, count: int, timeout: float) -> tuple[list, bytes]:
    """The checks' results as they come; a channel that ends early yields exit 255 for the rest. Returns the
    results and whatever bytes came after the last one."""
    chan.settimeout(timeout)
    buf, results, out, err = b"", [], [], []
    while len(results) < count:
        chunk = chan.recv(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf and len(results) < count:
            raw, buf = buf.split(b"\n", 1)
            line = raw.decode(errors="replace")
            if line.startswith(SPLIT + " "):
                code = line[len(SPLIT) + 1:].strip()
                results.append(CheckResult(int(code) if code.isdigit() else 255, _text(out), _text(err)))
                out, err = [], []
            elif line.startswith(ERR):
                err.append(line[len(ERR):])
            else:
                out.append(line)
    chan.settimeout(None)
    while len(results) < count:
        results.append(CheckResult(255, _text(out), _text(err + [buf.decode(errors="replace")])))
        out, err, buf = [], [], b""
    return results, buf


def _text(lines: list) -> str:
    return "".join(line + "\n" for line in lines)
