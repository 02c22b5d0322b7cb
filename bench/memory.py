"""kit's peak memory where the data is large: code sync of a 300 MB file to one SSH host (namespace host with real
sshd, tests/harness), and `kit logs --tail 20` of a 600 MB node log. Each is measured against a baseline in the
same run, the same command on a tiny file, as the peak resident set of the kit process (its children's
ru_maxrss, read with os.wait4). Target: under 100 MB each; exit 1 when missed.

    .venv/bin/python bench/memory.py [--sync-mb 300] [--log-mb 600]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.harness.configs import ssh_cluster_config  # noqa: E402
from tests.harness.session import harness  # noqa: E402

TARGET_MB = 100.0
MB = 1 << 20


def peak_mb(argv, cwd) -> tuple[float, int]:
    """(peak RSS of the command in MB, its exit code)."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err[-2000:]}")
    return usage.ru_maxrss / 1024, proc.returncode


def write_file(path: Path, size_mb: float, line: bytes = b"") -> None:
    chunk = (line * (MB // len(line) + 1))[:MB] if line else os.urandom(MB)
    with open(path, "wb") as f:
        for _ in range(int(size_mb)):
            f.write(chunk)
        if size_mb < 1:
            f.write(chunk[: int(size_mb * MB)])


def sync_peak(h, base: Path, size_mb: float, tag: str) -> float:
    src = base / f"src-{tag}"
    src.mkdir()
    (src / "job.py").write_text("print('synced')\n")
    write_file(src / "data.bin", size_mb)
    workdir = base / f"work-{tag}"
    cfg = ssh_cluster_config(
        h.ssh, base / f"cluster-{tag}.yaml", python=sys.executable, workdir=str(workdir), sync={"source": str(src)}
    )
    mb, _ = peak_mb(
        [sys.executable, "-m", "launcher", "submit", "job.py", "--cluster", str(cfg), "--run-id", f"mem-sync-{tag}"],
        cwd=src,
    )
    assert (workdir / "data.bin").stat().st_size == (src / "data.bin").stat().st_size
    return mb


def tail_peak(base: Path, size_mb: float, tag: str) -> float:
    run = base / "runs" / f"mem-logs-{tag}"
    run.mkdir(parents=True)
    (run / "status.json").write_text(
        json.dumps(
            {
                "run_id": run.name,
                "backend": "local",
                "state": "succeeded",
                "exit_code": 0,
                "nodes": [{"rank": 0, "host": "localhost"}],
            }
        )
    )
    write_file(run / "node0.log", size_mb, b"[node0/rank0] step 1234: loss 0.4321 accuracy 0.8765\n")
    mb, _ = peak_mb(
        [sys.executable, "-m", "launcher", "logs", run.name, "--tail", "20", "--run-root", str(base / "runs")], cwd=base
    )
    return mb


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sync-mb", type=float, default=300)
    p.add_argument("--log-mb", type=float, default=600)
    args = p.parse_args()
    missed = False
    with tempfile.TemporaryDirectory(prefix="kit-bench-mem-") as tmp:
        base = Path(tmp)
        os.environ["KIT_HOME"] = str(base / "kit-home")  # its runs stay out of your own index of runs
        small, big = tail_peak(base, 0.01, "small"), tail_peak(base, args.log_mb, "big")
        print(
            f"kit logs --tail 20: {args.log_mb:g} MB log {big:.0f} MB peak RSS, 10 KB log {small:.0f} MB "
            f"({big / small:.2f}x); target < {TARGET_MB:g} MB",
            flush=True,
        )
        missed |= big >= TARGET_MB
    with harness(1, ssh=True) as h:
        base = Path(h.bed.path("bench"))
        base.mkdir()
        os.environ["KIT_HOME"] = str(base / "kit-home")
        small, big = sync_peak(h, base, 0.01, "small"), sync_peak(h, base, args.sync_mb, "big")
        print(
            f"sync to 1 SSH host: {args.sync_mb:g} MB file {big:.0f} MB peak RSS, 10 KB file {small:.0f} MB "
            f"({big / small:.2f}x); target < {TARGET_MB:g} MB",
            flush=True,
        )
        missed |= big >= TARGET_MB
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
