"""The node watchdog alone (no torch): it sees and stops every descendant, daemons included, when told to or
when its supervisor disappears, and it exits only when nothing of its node is left."""

import io
import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

from launcher.supervise import WATCHDOG, watchdog

# A node command whose "rank" escapes into its own session (like torchrun's workers), plus a double-forked
# daemon that init would adopt without a subreaper; both write their pid and then sleep.
ESCAPING = ("setsid sleep 300 & echo rank $! > {d}/pids; "
            "( setsid bash -c 'sleep 301 & echo daemon $! >> {d}/pids' & ); sleep 302")


def _start(tmp_path, command, grace=30):
    return subprocess.Popen([sys.executable, WATCHDOG, "--log", str(tmp_path / "node.log"),
                             "--grace", str(grace), "--", "bash", "-c", command],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _pids(tmp_path, want=2, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = tmp_path / "pids"
        lines = path.read_text().split() if path.exists() else []
        if len(lines) == 2 * want:
            return [int(x) for x in lines[1::2]]
        time.sleep(0.05)
    raise AssertionError("the command never started its processes")


def _alive(pids):
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_escaped_and_daemonized_processes_are_stopped_on_request(tmp_path):
    dog = _start(tmp_path, ESCAPING.format(d=tmp_path))
    pids = _pids(tmp_path)
    assert all(psutil.Process(p).ppid() == dog.pid for p in pids[1:]), "the daemon is re-parented to the watchdog"
    dog.stdin.write(b"stop\n")
    dog.stdin.flush()
    assert dog.wait(timeout=20) == 128 + signal.SIGTERM
    assert _alive(pids) == []


def test_supervisor_gone_means_stop(tmp_path):
    """EOF on stdin is what the watchdog sees when kit is killed with SIGKILL."""
    dog = _start(tmp_path, ESCAPING.format(d=tmp_path))
    pids = _pids(tmp_path)
    dog.stdin.close()
    dog.wait(timeout=20)
    assert _alive(pids) == []


@pytest.mark.slow
def test_grace_then_kill_for_a_process_that_ignores_sigterm(tmp_path):
    command = f"trap '' TERM; (trap '' TERM; sleep 300) & echo x $! > {tmp_path}/pids; wait"
    dog = _start(tmp_path, command, grace=30)
    pids = _pids(tmp_path, want=1)
    dog.stdin.write(b"stop\n")
    dog.stdin.flush()
    time.sleep(2)
    assert _alive(pids), "SIGKILL must wait for the grace period"
    dog.stdin.write(b"hurry\n")  # what a second Ctrl-C sends
    dog.stdin.flush()
    dog.wait(timeout=15)
    assert _alive(pids) == []


def test_exit_code_log_and_leftovers_after_a_normal_exit(tmp_path):
    command = f"echo hello; printf '[node0/rank0] \\rstep 1\\n[node0/rank0] \\rstep 2\\n'; " \
              f"setsid sleep 300 & echo x $! > {tmp_path}/pids; exit 7"
    dog = _start(tmp_path, command)
    pids = _pids(tmp_path, want=1)
    out = dog.communicate(timeout=40)[0].decode()
    assert dog.returncode == 7
    assert _alive(pids) == [], "a process left behind by a finished node is stopped too"
    assert "hello" in out and "\rstep 2" in out
    log = (tmp_path / "node.log").read_text()
    # Progress redraws reach the log without the carriage return, at most one per interval.
    assert "hello\n" in log and "[node0/rank0] step 1\n" in log and "step 2" not in log


def test_output_keeps_flowing_to_the_log_when_stdout_is_gone(tmp_path):
    command = "for i in $(seq 1 20000); do echo line $i; done; echo done"
    dog = _start(tmp_path, command)
    dog.stdout.close()  # nobody reads: writes to the pipe fail with EPIPE, the node must not block or die
    assert dog.wait(timeout=60) == 0
    log = (tmp_path / "node.log").read_text()
    assert log.endswith("done\n") and log.count("\n") == 20001


def test_inherited_fds_do_not_reach_the_command(tmp_path):
    # posix_spawn keeps every fd not marked close-on-exec: one inherited open (a shell's `3>&1`) must not reach
    # the node, where it would hold the supervisor's pipe open after the watchdog is gone.
    r, w = os.pipe()
    try:
        command = f"if [ -e /proc/$$/fd/{w} ]; then echo leaked; else echo closed; fi"
        dog = subprocess.Popen([sys.executable, WATCHDOG, "--", "bash", "-c", command],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(w,))
        out = dog.communicate(timeout=20)[0].decode()
    finally:
        os.close(r)
        os.close(w)
    assert dog.returncode == 0
    assert out == "closed\n"


def test_process_tree_from_proc_skips_zombies_and_reads_odd_names(tmp_path):
    # live_descendants() is what teardown waits on: grandchildren included, zombies (exited, not yet reaped)
    # not, and a name holding ") " must not shift /proc/PID/stat's fields.
    odd = tmp_path / "a) b (c"
    shutil.copy("/bin/sleep", odd)
    child = subprocess.Popen(["bash", "-c", f"'{odd}' 300 & echo $!; wait"], stdout=subprocess.PIPE)
    grandchild = int(child.stdout.readline())
    zombie = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while watchdog.proc_stat(zombie.pid)[0] != b"Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        pids = dict(watchdog.live_descendants())
        assert child.pid in pids and grandchild in pids and zombie.pid not in pids
        assert watchdog.proc_stat(grandchild)[1] == child.pid
        assert pids[grandchild] == psutil_start_ticks(grandchild)
    finally:
        child.kill()
        os.kill(grandchild, signal.SIGKILL)
        child.wait()
        zombie.wait()


def psutil_start_ticks(pid):
    return round((psutil.Process(pid).create_time() - psutil.boot_time()) * os.sysconf("SC_CLK_TCK"))


def test_a_recycled_pid_is_never_signalled():
    # A process is (pid, start time): the same pid with another start time is some other process.
    proc = subprocess.Popen(["sleep", "300"])
    try:
        start = dict(watchdog.live_descendants())[proc.pid]
        watchdog._signal((proc.pid, start + 1), signal.SIGKILL)
        time.sleep(0.2)
        assert proc.poll() is None
        watchdog._signal((proc.pid, start), signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()


def test_variables_reach_the_watchdog_unchanged(monkeypatch):
    # Secrets travel this way: any value a variable can hold (newlines, `=`, quotes, non-ASCII), the line after
    # it (a control word) left unread.
    sent = {"TOKEN": "a=b\nc 'd' \"e\" $(f) \u00e9\u4e2d", "EMPTY": "", "PATH": "/override"}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(watchdog.encode_env(sent) + b"stop\n")))
    env = watchdog.env_from_stdin()
    assert {k: env[k] for k in sent} == sent
    assert env["HOME"] == os.environ["HOME"]
    assert sys.stdin.buffer.readline() == b"stop\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(watchdog.encode_env({}))))
    assert watchdog.env_from_stdin() == dict(os.environ)


@pytest.mark.parametrize("line, progress", [
    (b"[node0/rank1] \rstep 3\n", (b"[node0/rank1] ", b"step 3\n")),
    (b"[node12] \r50%\n", (b"[node12] ", b"50%\n")),
    (b"\rbare\n", (b"", b"bare\n")),
    (b"[node0/rank1] step 3\n", None),
    (b"[node0/rank] \rx\n", None),        # not a tag: the progress mark is not at the line's start
    (b"[nodex/rank1] \rx\n", None),
    (b"[node0/rank1/rank2] \rx\n", None),
    (b"[node0]\rx\n", None),
    (b"plain\n", None),
])
def test_progress_lines_are_told_by_their_tag_and_carriage_return(line, progress):
    assert watchdog.split_progress(line) == progress
