"""The node's check program on the host, last part: once the checks have printed their results it waits for kit's
word and becomes the node's watchdog in the same process (gate.py says why one process).

It runs under the node's python after the node's setup lines (in its workdir, with their environment), as the
child of the gate shell. On `go` it undoes what the setup lines did to itself: it takes the gate shell's
environment (the login's, as sshd gave it: /proc shows a process's environment as it was at exec) and the
login's working directory (KIT_LOGIN_DIR, which the gate sets), starts a session of its own, says its pid
and start time (the run record's handle for cancel), and runs the node's command under the watchdog,
unchanged, as `bash --norc -c COMMAND`: the login shell has read ~/.bashrc already, and a bash under sshd would
read it again (as the check, which ran with --norc too, did not).
Arguments (the last two): grace seconds, the node's command. Anything but `go` first on stdin (kit closing the
channel because some host failed its checks) ends it, having started nothing.

The watchdog's source (its output part's too) is part of the program (no file to upload, and hosts sharing a workdir
do not write the same file). It is compiled and loaded (definitions and imports only: nothing runs) right after the
program says it waits: the checks' results reach kit first, and the loading fills the time kit takes to hear from
every host, write the run record and upload, so that after `go` the node starts at once.
"""

import functools

from launcher.supervise import WATCHDOG, WATCHDOG_OUTPUT
from launcher.backends.ssh.node import HELLO

WAITING = "kit-boot:waiting"
WATCHDOG_NAME = "kit-watchdog"  # the watchdog module's name on the host (in its tracebacks)

_BOOT = """\
import os, sys, time
grace, heartbeat, command = sys.argv[-3:]
sys.stderr.flush()
print({waiting!r}, flush=True)
out = sys.modules["watchdog_output"] = type(sys)("watchdog_output")
exec(compile({output!r}, "watchdog_output.py", "exec"), out.__dict__)
dog = type(sys)({name!r})
exec(compile({source!r}, {name!r} + ".py", "exec"), dog.__dict__)
if sys.stdin.buffer.readline().strip() != b"go":
    os._exit(0)
os.setsid()
with open("/proc/%d/environ" % os.getppid(), "rb") as f:
    login_env = dict(v.split(b"=", 1) for v in f.read().split(b"\\0") if b"=" in v)
os.chdir(os.environ["KIT_LOGIN_DIR"])
os.environ.clear()
os.environb.update(login_env)
print({hello!r} + " %d %d %d" % (os.getpid(), dog.proc_stat(os.getpid())[2], time.time()), flush=True)
code = dog.run(["bash", "--norc", "-c", command], float(grace), dog.env_from_stdin(), heartbeat=float(heartbeat))
sys.stdout.flush()
os._exit(code)
"""


@functools.lru_cache(maxsize=1)
def boot_source() -> str:
    """The program's last part, the watchdog's source (its output part first) in it. The same for every node: the
    watchdog's files are read once per kit process, not once per host."""
    with open(WATCHDOG_OUTPUT, encoding="utf-8") as f:
        output = f.read()
    with open(WATCHDOG, encoding="utf-8") as f:
        source = f.read()
    return _BOOT.format(waiting=WAITING, name=WATCHDOG_NAME, output=output, source=source, hello=HELLO)
