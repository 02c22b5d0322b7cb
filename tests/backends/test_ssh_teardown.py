"""Teardown over SSH: a killed rank, Ctrl-C, `kit cancel` of a detached run and `kill -9` of kit each leave no
process of the run on any host (checked inside each host's PID namespace); other processes are never touched."""

import json
import os
import signal
import subprocess
import time

from tests.backends.sshrun import cluster, leftovers, watchdogs, workdir
from tests.launcher.localrun import kit, kit_background, reports, wait_for, write_job


def _start(ssh_hosts, tmp_path, run_id, *extra, detach=False):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "120"])
    argv = ("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", run_id, *extra)
    if detach:
        result = kit(*argv, "--detach", cwd=workdir(ssh_hosts))
        assert result.returncode == 0, result.stderr
        proc = None
    else:
        proc = kit_background(*argv, cwd=workdir(ssh_hosts))
    assert wait_for(lambda: len(reports(out)) == 2, timeout=90), "the ranks never reported"
    return proc


def _gone_within(ssh_hosts, run_id, seconds):
    started = time.monotonic()
    assert wait_for(lambda: not leftovers(ssh_hosts, run_id), timeout=seconds, interval=0.25), \
        leftovers(ssh_hosts, run_id)
    return time.monotonic() - started


def _rank_on(host):
    """The rank itself (torchrun's worker), not the accelerate launcher that names the script too."""
    return next(p for p in host.processes() if any(c.endswith("rank_probe.py") for c in p["cmdline"][1:3])
                and not any("accelerate" in c for c in p["cmdline"]))


def test_a_killed_rank_brings_the_run_down_naming_the_host(ssh_hosts, tmp_path):
    proc = _start(ssh_hosts, tmp_path, "ssh-kill-rank")
    os.kill(_rank_on(ssh_hosts.hosts[1])["pid"], signal.SIGKILL)
    started = time.monotonic()
    out, _ = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert proc.returncode != 0
    assert "node 1 (n2)" in out.splitlines()[-1], out[-2000:]
    _gone_within(ssh_hosts, "ssh-kill-rank", 5)


def _zombie_children(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def test_ctrl_c_stops_every_host(ssh_hosts, tmp_path):
    proc = _start(ssh_hosts, tmp_path, "ssh-ctrl-c")
    assert _zombie_children(proc.pid) == []   # the forked planner was reaped before the run started
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=40)
    assert proc.returncode == 130, out[-2000:]
    _gone_within(ssh_hosts, "ssh-ctrl-c", 5)
    status = json.load(open(f"{workdir(ssh_hosts)}/runs/ssh-ctrl-c/status.json"))
    assert status["state"] == "cancelled"


def test_kill_9_of_kit_leaves_nothing_within_15_s(ssh_hosts, tmp_path):
    proc = _start(ssh_hosts, tmp_path, "ssh-kill-9")
    proc.kill()
    proc.wait(5)
    took = _gone_within(ssh_hosts, "ssh-kill-9", 15)
    print(f"kill -9 of kit: hosts clean after {took:.1f} s")
    # The record still says running; status asks the hosts and reports the run as lost.
    status = kit("status", "ssh-kill-9", cwd=workdir(ssh_hosts))
    assert "state lost" in status.stdout and "died before recording" in status.stdout, status.stdout


def test_cancel_of_a_detached_run_spares_other_processes(ssh_hosts, tmp_path):
    n1 = ssh_hosts.hosts[0]
    # Another run's process on the same host, named like ours: only this run's recorded groups may be hit.
    other = n1.popen(["env", "KIT_RUN_ID=some-other-run", "bash", "-c", "exec -a kit-watchdog.py sleep 300"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _start(ssh_hosts, tmp_path, "ssh-detached", detach=True)
        # The submitting process's checked-but-unused launch channels ended without starting anything: one
        # boot per host is left, the detached supervisor's, which became that node's watchdog.
        assert wait_for(lambda: [len(watchdogs(h, "ssh-detached")) for h in ssh_hosts.hosts[:2]] == [1, 1],
                        timeout=5), [watchdogs(h, "ssh-detached") for h in ssh_hosts.hosts[:2]]
        status = kit("status", "ssh-detached", cwd=workdir(ssh_hosts))
        assert "state running" in status.stdout, status.stdout + status.stderr
        result = kit("cancel", "ssh-detached", cwd=workdir(ssh_hosts), timeout=90)
        assert result.returncode == 0 and "cancelled" in result.stdout, result.stdout + result.stderr
        _gone_within(ssh_hosts, "ssh-detached", 5)
        assert other.poll() is None, "another run's process was killed"
        assert "some-other-run" in " ".join(
            open(f"/proc/{p['pid']}/environ", "rb").read().decode(errors="replace")
            for p in n1.processes() if "kit-watchdog.py" in p["cmdline"][:1])
        status = kit("status", "ssh-detached", cwd=workdir(ssh_hosts))
        assert "state cancelled" in status.stdout, status.stdout
    finally:
        other.kill()
        other.wait(5)
