"""A rank slowed from outside (SIGSTOP/SIGCONT at half duty) is named as the straggler within a minute (issue 31
item 4), on the harness's SSH hosts: one line on kit's console, the same in kit status and --json."""

import json
import os
import signal
import threading
import time

from tests.backends.sshrun import leftovers, workdir
from tests.insight.runs import Lines, rank_pids, training_run
from tests.launcher.localrun import kit, wait_for

NAMED = "kit: straggler: node 1 (n2) rank 1, "


def _half_duty(pid: int, stop: threading.Event, period: float = 0.5) -> None:
    while not stop.is_set():
        try:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(period / 2)
        finally:
            os.kill(pid, signal.SIGCONT)
        time.sleep(period / 2)


def test_a_rank_slowed_from_outside_is_named_within_a_minute(ssh_hosts, tmp_path):
    n2 = ssh_hosts.hosts[1]
    proc, out = training_run(ssh_hosts, tmp_path, "straggle", "--max-steps", "100000", "--eval-every", "0",
                             "--save-every", "100000", "--log-every", "1000")
    lines, stop = Lines(proc), threading.Event()
    try:
        assert lines.wait_for("[node0/rank0] ", timeout=180), "\n".join(lines.lines)
        assert wait_for(lambda: rank_pids(n2, 1), timeout=60), "no rank 1 on n2"
        time.sleep(8)   # training: a report window or two at full speed first
        assert lines.wait_for("kit: straggler", timeout=0.1) is None, "named before it was slowed"
        slowed = time.monotonic()
        threading.Thread(target=_half_duty, args=(rank_pids(n2, 1)[0], stop), daemon=True).start()
        named = lines.wait_for(NAMED, timeout=60)
        took = time.monotonic() - slowed
        assert named is not None, "\n".join(lines.lines[-30:])
        assert took < 60 and (" forward " in named or " data " in named), (took, named)
        print(f"named {took:.1f} s after the rank was slowed: {named}")
        stop.set()
        status = kit("status", "straggle", cwd=workdir(ssh_hosts))
        assert f"  straggler: {named[len('kit: straggler: '):].split(' (its relative score')[0]}" in status.stdout
        data = json.loads(kit("status", "straggle", "--json", cwd=workdir(ssh_hosts)).stdout)["straggler"]
        assert (data["node"], data["host"], data["rank"]) == (1, "n2", 1) and data["score"] < 0.7
        assert len([ln for ln in lines.lines if "kit: straggler" in ln]) == 1   # named once
    finally:
        stop.set()
        if proc.poll() is None:
            kit("cancel", "straggle", cwd=workdir(ssh_hosts))
        proc.wait(timeout=120)
    assert wait_for(lambda: leftovers(ssh_hosts, "straggle") == {}, timeout=40)
