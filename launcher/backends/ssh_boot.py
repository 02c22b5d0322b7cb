"""The end of the node's check program on the host: once the checks have printed their results, wait for kit's
word, then become the node's watchdog in the same process (ssh_gate.py says why one process).

It runs under the node's python after the node's setup lines (in its workdir, with their environment), as the
child of the gate shell. On `go` it undoes what the setup lines did to itself: it takes the gate shell's
environment and working directory (the login's, as sshd gave them), starts a session of its own, says its pid
and start time (the run record's handle for cancel), loads the uploaded watchdog and runs the node's command
under it, unchanged, as `bash --norc -c COMMAND`: the login shell has read ~/.bashrc already, and a bash under
sshd would read it again (as the check, which ran with --norc too, did not).
Arguments (the last three): watchdog path, grace seconds, the node's command. Anything but `go` first on stdin
(kit closing the channel because some host failed its checks) ends it, having started nothing.

While it waits (for the other hosts' checks, then for kit to write the run record and upload), a thread imports
what the watchdog imports (WATCHDOG_IMPORTS, psutil the heaviest): after `go` only the watchdog's own module is
left to load, and the node starts ~30 ms sooner. A failing import is left for the watchdog's own, which reports it.
"""

from launcher.supervise.ssh_node import HELLO

WAITING = "kit-boot:waiting"
# The modules launcher/supervise/watchdog.py imports (a test keeps the two equal).
WATCHDOG_IMPORTS = ("argparse", "ctypes", "json", "os", "re", "signal", "subprocess", "sys", "threading", "time",
                    "psutil")

BOOT_SOURCE = f"""\
import importlib.util, os, sys, time
watchdog, grace, command = sys.argv[-3:]
sys.stderr.flush()
print("{WAITING}", flush=True)
import threading
def preload():
    for name in {WATCHDOG_IMPORTS!r}:
        try:
            __import__(name)
        except Exception:
            pass
loading = threading.Thread(target=preload, daemon=True)
loading.start()
if sys.stdin.buffer.readline().strip() != b"go":
    os._exit(0)
os.dup2(1, 2)
os.setsid()
gate = os.getppid()
with open("/proc/%d/environ" % gate, "rb") as f:
    login_env = dict(v.split(b"=", 1) for v in f.read().split(b"\\0") if b"=" in v)
os.chdir(os.readlink("/proc/%d/cwd" % gate))
os.environ.clear()
os.environb.update(login_env)
with open("/proc/self/stat") as f:
    ticks = f.read().rsplit(")", 1)[1].split()[19]
print("{HELLO} %d %s %d" % (os.getpid(), ticks, time.time()), flush=True)
loading.join()
spec = importlib.util.spec_from_file_location("kit_watchdog", watchdog)
dog = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dog)
code = dog.main(["--env-from-stdin", "--grace", grace, "--", "bash", "--norc", "-c", command])
sys.stdout.flush()
os._exit(code)
"""

