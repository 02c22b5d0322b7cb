"""Restart after a rank's death against a fresh launch of the same job, measured in one run (issue 20).

A 2-node local run of the training module (tiny model, --log-every 1, a checkpoint every few steps):
* fresh: `kit submit` to the first logged training step;
* restart: the same job with `restarts: 1`; once a checkpoint exists rank 1 gets SIGKILL; from the kill to kit's
  "attempt 2/2" line is the dead world's teardown, and from the kill to the restarted world's first logged step
  (the step after the resumed one) is the restart.
Target: restart <= teardown + 1.2 x fresh. Prints the medians of --rounds rounds; exit 1 when missed.

Then the restart phase by phase, as `kit report --json` accounts it (insight/restarts.py: detect, stop, relaunch,
imports, rendezvous, set-up, restore, first step, adding up to the gap from the failure to the restarted world's
first step), one column per restart path: only the full path exists today (issue 39 item 5 adds warm beside it).

    .venv/bin/python bench/restart.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.launcher.localrun import LOCAL_CLUSTER, pids_of_run  # noqa: E402
from tests.train.launch import link_reference_module  # noqa: E402
from tests.train.support import resumable_args, synthetic_rows, write_csv  # noqa: E402

TARGET = 1.2
STEP = re.compile(r"^(?:\[node\d+/rank\d+\] )?step (\d+)/")


def _job(base: Path, name: str, restarts: int, steps: int) -> str:
    link_reference_module(base)  # kit runs from base, the nodes' workdir: the project that holds train/
    data = write_csv(base / "d.csv", synthetic_rows(400))
    args = resumable_args(
        data,
        base / f"out-{name}",
        base / "cache",
        "--max-steps",
        str(steps),
        "--log-every",
        "1",
        "--save-every",
        "4",
        "--no-save-model",
    )
    path = base / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "entrypoint": {"module": "train"},
                "args": args,
                "nodes": 2,
                "procs_per_node": 1,
                "restarts": restarts,
            }
        )
    )
    return str(path)


class Watched:
    """`kit submit` with every output line time-stamped as it comes."""

    def __init__(self, job: str, run_id: str, cwd: Path):
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "launcher", "submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", run_id],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[tuple[float, str]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def first(self, test, after: float = 0.0, timeout: float = 600.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, line in list(self.lines):
                if t >= after and test(line):
                    return t
            if self.proc.poll() is not None and not any(t >= after and test(ln) for t, ln in self.lines):
                break
            time.sleep(0.02)
        raise RuntimeError("expected output never came:\n" + "\n".join(ln for _, ln in self.lines[-30:]))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _rank1(run_id: str) -> list[int]:
    found = []
    for pid in pids_of_run(run_id):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if b"RANK=1" in f.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            pass
    return found


def one_round(base: Path, k: int) -> dict:
    fresh = Watched(_job(base, f"fresh{k}", 0, 6), f"fresh-{k}", base)
    first = fresh.first(lambda ln: bool(STEP.match(ln))) - fresh.started
    fresh.proc.wait(timeout=600)

    run_id = f"restart-{k}"
    run = Watched(_job(base, f"restart{k}", 1, 400), run_id, base)
    ckpts = base / f"out-restart{k}" / "checkpoints"
    try:
        deadline = time.monotonic() + 600
        while not (ckpts.is_dir() and any(n.startswith("step-") for n in os.listdir(ckpts))):
            if time.monotonic() > deadline:
                raise RuntimeError("no checkpoint")
            time.sleep(0.05)
        killed, killed_wall = time.monotonic(), time.time()
        for pid in _rank1(run_id):
            os.kill(pid, signal.SIGKILL)
        again = run.first(lambda ln: "attempt 2/2" in ln, after=killed)
        resumed = run.first(lambda ln: "resumed from" in ln, after=again)
        step = run.first(lambda ln: bool(STEP.match(ln)), after=resumed)
    finally:
        run.stop()
    restart = _report_restart(run_id, base)
    return {
        "fresh_s": first,
        "teardown_s": again - killed,
        "restart_s": step - killed,
        "phases": restart["phases"],
        "gap_s": restart["gap_s"],
        "path": restart["path"],
        "failure_before_kill_s": killed_wall - restart["failed_at"],
    }


def _report_restart(run_id: str, base: Path) -> dict:
    """The restart after attempt 1 as `kit report --json` gives it: its path, gap and phases."""
    r = subprocess.run(
        [sys.executable, "-m", "launcher", "report", run_id, "--json"],
        cwd=base,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if r.returncode != 0:
        raise RuntimeError(f"kit report {run_id} failed: {r.stderr.strip()}")
    restart = json.loads(r.stdout)["attempts"][0]["restart"]
    if not restart or restart["gap_s"] is None:
        raise RuntimeError(f"kit report {run_id} has no restart phases: {restart}")
    return restart


def phase_table(rows: list[dict]) -> str:
    """Medians of each phase over the rounds, one column per restart path (full now; warm to be added)."""
    paths = sorted({r["path"] for r in rows}, key=lambda p: (p != "full", p))
    names: list[str] = []
    for r in rows:
        names += [p["phase"] for p in r["phases"] if p["phase"] not in names]

    def med(path, name):
        got = [next((p["s"] for p in r["phases"] if p["phase"] == name), 0.0) for r in rows if r["path"] == path]
        return statistics.median(got) if got else None

    width = max(len(n) for n in names + ["the gap (sum)"])
    lines = [f"{'phase':<{width}}" + "".join(f"  {p:>8}" for p in paths)]
    for name in names:
        lines.append(f"{name:<{width}}" + "".join(f"  {med(p, name):>6.2f} s" for p in paths))
    lines.append(
        f"{'the gap (sum)':<{width}}"
        + "".join(f"  {statistics.median(r['gap_s'] for r in rows if r['path'] == p):>6.2f} s" for p in paths)
    )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kit-bench-restart-") as tmp:
        os.environ["KIT_HOME"] = os.path.join(tmp, "kit-home")  # its runs stay out of your own index of runs
        for k in range(args.rounds):
            rows.append(one_round(Path(tmp), k))
            r = rows[-1]
            print(
                f"round {k + 1}: fresh launch to first step {r['fresh_s']:.2f} s; rank killed -> teardown "
                f"{r['teardown_s']:.2f} s -> restarted world's first step {r['restart_s']:.2f} s",
                flush=True,
            )
            print(
                f"  kit report: {r['path']} restart, {r['gap_s']:.2f} s from the failure (its last training "
                f"report, {r['failure_before_kill_s']:.2f} s before the kill): "
                + ", ".join(f"{p['phase']} {p['s']:.2f}" for p in r["phases"]),
                flush=True,
            )
    med = {key: statistics.median(r[key] for r in rows) for key in ("fresh_s", "teardown_s", "restart_s")}
    budget = med["teardown_s"] + TARGET * med["fresh_s"]
    ok = med["restart_s"] <= budget
    print(
        f"median: fresh {med['fresh_s']:.2f} s, teardown {med['teardown_s']:.2f} s, "
        f"restart {med['restart_s']:.2f} s; "
        f"restart / (teardown + fresh) = {med['restart_s'] / (med['teardown_s'] + med['fresh_s']):.2f}; target: "
        f"restart <= teardown + {TARGET} x fresh = {budget:.2f} s: {'met' if ok else 'MISSED'}"
    )
    print(f"the restart phase by phase (kit report; medians of {len(rows)} round(s)):")
    print(phase_table(rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
