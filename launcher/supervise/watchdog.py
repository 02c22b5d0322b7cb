"""The node watchdog: runs one node's command and makes sure nothing it started outlives the node.

    python watchdog.py [--log FILE] [--grace S] [--env-from-stdin] -- bash -c COMMAND

One watchdog per node, in its own session. It is the child subreaper of everything below it, so ranks that
torchrun starts in sessions of their own, and anything that daemonizes, are re-parented to it and stay
visible in its process tree (read from /proc) whatever their process group.

Control, from the supervisor (kit) or the remote side of an SSH channel:
* stdin lines: `stop` (SIGTERM to every descendant, SIGKILL after the grace period), `hurry` (shorten the
  grace period to a few seconds), `kill` (SIGKILL now). **EOF on stdin means the supervisor is gone**: the node
  is stopped as for `stop`. That ties the run to its supervisor even after `kill -9` of kit.
* signals: SIGTERM or SIGHUP = `stop`; SIGINT = `hurry` (a second one = `kill`).

Output: the command's stdout and stderr are copied to `--log` (if given; it keeps being written when the
supervisor is gone) and to our stdout, whose loss (EPIPE) never stalls the node. Progress lines (their text
after the `[nodeN/rankR] ` tag starts with a carriage return) go to stdout as they come but into the log at
most once per PROGRESS_LOG_INTERVAL seconds, without the carriage return.

Exit status: the command's own (128+N if a signal killed it), once no descendant is left.

Self-contained (the standard library, and its output part watchdog_output.py) so that it can be shipped to a remote
host as is (backends/ssh/boot.py sends both). Each host of an SSH fan-out starts one, so what it imports is CPU paid
per host, measured at each Python start: the process tree comes from /proc (psutil: ~11 ms), the command starts
with posix_spawn (subprocess: ~4 ms), threads and signals come from the C modules under `threading` and `signal`
(those two and `enum` below them: ~6 ms), and neither `re` nor `json` is needed (~5 ms).
"""

import _signal as signal  # the ints, without the enum wrappers
import _thread
import ctypes
import os
import sys
import time

try:  # run by path (a node here), or loaded by the SSH boot program under this name: the part beside this file
    from watchdog_output import PROGRESS_MARK, Output, split_progress  # noqa: F401  (re-exported for the tests)
except ImportError:  # imported as part of kit
    from launcher.supervise.watchdog_output import PROGRESS_MARK, Output, split_progress  # noqa: F401

PR_SET_CHILD_SUBREAPER = 36
DEFAULT_GRACE = 40.0
HURRY_GRACE = 3.0
POLL = 0.05


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def mark_fds_cloexec() -> None:
    """Mark every fd above stderr close-on-exec: an fd inherited open (a shell's redirection) must not reach the
    command (subprocess closes them all; posix_spawn only honours close-on-exec)."""
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            try:
                os.set_inheritable(int(name), False)
            except OSError:  # the listing's own fd, closed by now
                pass


def proc_stat(pid: int):
    """(state, ppid, start time in clock ticks) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2 :].split()  # the name, in parentheses, may hold spaces and ")"
        return fields[0], int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):  # gone, or going, while read
        return None


def live_descendants() -> list:
    """Every live process below this one, as (pid, start time) (zombies excluded); as subreaper that includes
    re-parented orphans. A pid with its start time names one process for good: a recycled pid is never signalled
    (_signal below)."""
    children: dict[int, list] = {}  # ppid -> [(pid, its proc_stat)]
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None:
                children.setdefault(st[1], []).append((int(name), st))
    alive, todo = [], [os.getpid()]
    while todo:
        for pid, (state, _, start) in children.get(todo.pop(), ()):
            todo.append(pid)
            if state != b"Z":
                alive.append((pid, start))
    return alive


def _signal(proc, sig) -> None:
    """Signal the process (pid, start time) if it is still that process."""
    pid, start = proc
    st = proc_stat(pid)
    if st is not None and st[2] == start:
        try:
            os.kill(pid, sig)
        except OSError:  # gone meanwhile
            pass


class Watchdog:
    def __init__(self, argv, grace: float, env: dict, log_path):
        self.argv, self.grace, self.env = argv, grace, env
        self.output = Output(log_path)
        self.code: int | None = None  # the command's exit status, once reaped
        self.deadline: float | None = None  # set when stopping: SIGKILL whatever is left after it
        self._lock = _thread.RLock()  # re-entered when a signal lands during stop()
        self.heartbeat = 0.0  # > 0: stop the node when kit has said nothing (not even `ping`) this long
        self.heard = time.monotonic()

    def _say(self, text: str) -> None:
        """A line of the watchdog's own into the node's output (and log)."""
        line = (text + "\n").encode()
        self.output._to_stdout(line)
        self.output._to_log(line)

    # -- requests (from stdin, signals) ------------------------------------------------------------
    def stop(self, grace=None) -> None:
        with self._lock:
            limit = time.monotonic() + (self.grace if grace is None else grace)
            self.deadline = limit if self.deadline is None else min(self.deadline, limit)

    def hurry(self) -> None:
        self.stop(0.0 if self.deadline is not None and self.deadline - time.monotonic() <= HURRY_GRACE else HURRY_GRACE)

    def control(self) -> None:
        for raw in sys.stdin.buffer:
            self.heard = time.monotonic()
            word = raw.strip().decode(errors="replace")
            {"stop": self.stop, "hurry": self.hurry, "kill": lambda: self.stop(0.0)}.get(word, lambda: None)()
        self.stop()  # EOF: whoever supervised this node is gone

    # -- the node ------------------------------------------------------------------------------
    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        # Its own process group (not session): a terminal's signals never reach it, only ours do. SIGPIPE and
        # SIGXFSZ back to their defaults (Python ignores them), as subprocess does. Our fds are all close-on-exec
        # (Python's own, and mark_fds_cloexec() for any inherited), so the command gets stdin, stdout, stderr only.
        mark_fds_cloexec()
        self.child_pid = os.posix_spawnp(
            self.argv[0],
            self.argv,
            self.env,
            setpgroup=0,
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, write_fd, 1),
                (os.POSIX_SPAWN_DUP2, write_fd, 2),
            ],
        )
        os.close(write_fd)
        self.pumped = _thread.allocate_lock()  # held until the output is all copied
        self.pumped.acquire()
        _thread.start_new_thread(self._pump, (read_fd,))

    def _pump(self, fd: int) -> None:
        try:
            self.output.pump(fd)
        finally:
            self.pumped.release()

    def _reap(self) -> None:
        """Collect every exited descendant (we are their subreaper); remember the command's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child_pid:
                code = os.waitstatus_to_exitcode(status)
                self.code = 128 - code if code < 0 else code

    def _signal_all(self, procs, sig, already) -> None:
        for p in procs:
            if sig == signal.SIGTERM and p in already:
                continue
            _signal(p, sig)
            already.add(p)

    def run(self) -> int:
        termed: set[tuple[int, int]] = set()  # (pid, start time) already sent SIGTERM
        while True:
            self._reap()
            if self.code is not None and self.deadline is None:
                self.stop()  # the command ended: stop whatever it left behind (normally nothing)
            if self.heartbeat and self.deadline is None and time.monotonic() - self.heard > self.heartbeat:
                # kit's host is unreachable (its connection may stay open for minutes): nothing of the run is
                # to be left here when the network comes back.
                self._say(f"kit-watchdog: nothing heard from kit for {self.heartbeat:.0f} s; stopping the node")
                self.stop()
            if self.deadline is None:
                time.sleep(POLL)
                continue
            left = live_descendants()
            if not left and self.code is not None:
                break
            if time.monotonic() >= self.deadline:
                self._signal_all(left, signal.SIGKILL, set())
            else:
                self._signal_all(left, signal.SIGTERM, termed)
            time.sleep(POLL)
        self.pumped.acquire(timeout=5)
        return self.code


def parse_args(argv):
    import argparse  # not at the top: a node started over SSH calls run() directly (backends/ssh/boot.py)

    p = argparse.ArgumentParser(prog="kit-watchdog", allow_abbrev=False)
    p.add_argument("--grace", type=float, default=DEFAULT_GRACE)
    p.add_argument("--log")
    p.add_argument(
        "--env-from-stdin",
        action="store_true",
        help="first stdin line: a JSON object of variables to add (secrets travel this way, not in argv)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        p.error("no command given")
    return args


def encode_env(env: dict) -> bytes:
    """Variables as env_from_stdin reads them: one line, the NAME=value pairs NUL-separated (an environment
    holds no NUL), in hex."""
    return b"\0".join(os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()).hex().encode() + b"\n"


def env_from_stdin() -> dict:
    """The environment plus the variables of stdin's first line (encode_env), the way secrets arrive."""
    env = dict(os.environ)
    line = sys.stdin.buffer.readline().strip()
    for item in bytes.fromhex(line.decode()).split(b"\0") if line else ():
        name, _, value = item.partition(b"=")
        env[os.fsdecode(name)] = os.fsdecode(value)
    return env


def run(command: list, grace: float = DEFAULT_GRACE, env=None, log_path=None, heartbeat: float = 0.0) -> int:
    """Run `command` to its end under the watchdog; its exit status. `heartbeat`: see Watchdog.heartbeat."""
    become_subreaper()
    dog = Watchdog(command, grace, dict(os.environ) if env is None else env, log_path)
    dog.heartbeat = heartbeat
    signal.signal(signal.SIGTERM, lambda *_: dog.stop())
    signal.signal(signal.SIGHUP, lambda *_: dog.stop())
    signal.signal(signal.SIGINT, lambda *_: dog.hurry())
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    dog.start()
    _thread.start_new_thread(dog.control, ())
    return dog.run()


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return run(args.command, args.grace, env_from_stdin() if args.env_from_stdin else None, args.log)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Not sys.exit: the control thread may still block on stdin, and interpreter shutdown would wait on it.
    os._exit(code)
