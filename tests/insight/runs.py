"""Helpers for the insight tests on the harness's SSH hosts: a 2-node run of the training module, its rank processes
on a host, and kit's output read while it runs."""

import os
import queue
import threading

import yaml

from tests.backends.sshrun import cluster, workdir
from tests.launcher.localrun import kit_background
from tests.train.support import resumable_args, synthetic_rows, write_csv


def training_run(ssh_hosts, tmp_path, run_id, *train_args, hosts=None, restarts=0, env=None, **fields):
    """Start `kit submit` of a 2-node (1 process each) run of the training module on tiny data; (proc, out dir)."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    out = tmp_path / "out"
    args = resumable_args(data, out, tmp_path / "cache", "--no-save-model", *train_args)
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"name": "insight", "entrypoint": {"module": "train"}, "args": args, "nodes": 2,
                                   "procs_per_node": 1, "restarts": restarts, "env": env or {}, **fields}))
    cfg = cluster(ssh_hosts, tmp_path, **({"hosts": hosts} if hosts else {}), cpu_threads_per_process=1)
    proc = kit_background("submit", str(job), "--cluster", cfg, "--run-id", run_id, cwd=workdir(ssh_hosts))
    return proc, out


def rank_pids(host, rank: int) -> list:
    """The host's processes of global rank `rank` of the training module (root-namespace pids)."""
    found = []
    for p in host.processes():
        if "train" not in p["cmdline"] or "accelerate.commands.launch" in " ".join(p["cmdline"]):
            continue
        try:
            with open(f"/proc/{p['pid']}/environ", "rb") as f:
                if f"RANK={rank}".encode() in f.read().split(b"\0"):
                    found.append(p["pid"])
        except OSError:
            continue
    return found


class Lines:
    """A process's output lines, read in a thread: `wait_for(text, timeout)` -> the line or None."""

    def __init__(self, proc):
        self.lines, self._q = [], queue.Queue()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc):
        for line in proc.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def wait_for(self, text: str, timeout: float):
        import time
        deadline = time.monotonic() + timeout
        for line in self.lines:
            if text in line:
                return line
        while time.monotonic() < deadline:
            try:
                line = self._q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if line is None:
                return None
            self.lines.append(line)
            if text in line:
                return line
        return None

    def rest(self, timeout: float) -> str:
        self.wait_for("\0never", timeout)
        return "\n".join(self.lines)


def record_dir(ssh_hosts, run_id) -> str:
    return os.path.join(workdir(ssh_hosts), "runs", run_id)
