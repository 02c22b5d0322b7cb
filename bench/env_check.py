"""What the environment check (job `env_check`) adds to a 2-host SSH submit: `kit submit` to both nodes' commands
running, with `env_check: strict` against `off`, alternating, on 2 namespace hosts with real sshd (tests/harness).

The job is the training module (`-m train`, so the check hashes its package, 25 files) whose nodes stop at their
first setup line in the real run (as in bench/ssh_fanout.py): what is timed is kit's start-up, logins, checks
and start. Prints each pair, the medians, their difference and kit's preflight phase from the run records.
Target: the check adds under 1 s (it rides the checks' one Python start per host); exit 1 when missed.

On SLURM the check is the plan's env_check.py, run by each task before its launcher; the tasks meet in the shared
run directory. The first part runs that program as 16 and 64 local "nodes" (one process each, with a SLURM task's
variables, on one temporary run directory) under strace and counts each node's file operations in the run
directory (opens, stats, renames, listings: what a Lustre or NFS metadata server answers). `--before REV` measures
the program as kit rendered it at git revision REV in the same run. Target: the most any node makes at 64 nodes is
at most 10 more than at 16 (constant per node); exit 1 when missed.

    .venv/bin/python bench/env_check.py [--repeats 7] [--nodes 16 64] [--before REV] [--no-ssh]
"""

import argparse
import compileall
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGET_S = 1.0
TARGET_OPS = 10  # the most a node makes at 64 nodes, over the most at 16


# ---- The tasks' meeting in the run directory (SLURM): file operations per node, counted by strace ----

TRACE_PATH = re.compile(r'"((?:[^"\\]|\\.)*)"')


def program_at(rev: Optional[str]) -> str:
    """The plan's env_check.py as kit renders it now, or at git revision `rev` (a baseline in the same run)."""
    if rev is None:
        from launcher.render.envcheck import program

        return program()
    text = subprocess.run(
        ["git", "show", f"{rev}:launcher/render/envcheck.py"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout
    namespace: dict = {"__name__": "kit_envcheck_baseline"}
    exec(compile(text, f"{rev}:launcher/render/envcheck.py", "exec"), namespace)
    return namespace["program"]()


def run_dir_ops(trace: Path, base: Path, run: Path) -> int:
    """File system calls (strace's `file` class: open, stat, rename, ...) a trace made on paths in `run`."""
    count = 0
    for line in trace.read_text(errors="replace").splitlines():
        m = TRACE_PATH.search(line)
        if m is None or line.startswith("+++") or "resumed>" in line:
            continue
        path = os.path.normpath(os.path.join(base, m.group(1)))
        count += path == str(run) or path.startswith(str(run) + os.sep)
    return count


def meet(
    program_text: str,
    nodes: int,
    base: Path,
    mode: str = "strict",
    absent: tuple = (),
    wait: float = 60,
    python_flags: tuple = (),
    trace: bool = True,
    env_of: Optional[dict] = None,
) -> dict:
    """Run the plan's env_check.py as `nodes` local "nodes" (one process each, with the variables a SLURM task
    has, and `env_of[node]` added) on one shared run directory, except the nodes in `absent` (they never report).
    Returns {node: (exit code, stderr, file operations in the run directory or None)}."""
    run = base / "runs" / "r"
    run.mkdir(parents=True)
    (run / "env_check.py").write_text(program_text)
    (base / "t.py").write_text("print('job')\n")
    procs = {}
    for i in range(nodes):
        if i in absent:
            continue
        argv = [
            sys.executable,
            *python_flags,
            "runs/r/env_check.py",
            mode,
            str(nodes),
            str(i),
            f"{wait:g}",
            "script",
            "t.py",
        ]
        if trace:
            argv = ["strace", "-f", "-qq", "-s", "4096", "-e", "trace=file", "-o", str(base / f"trace.{i}"), *argv]
        env = {
            **os.environ,
            "SLURM_NODEID": str(i),
            "SLURMD_NODENAME": f"n{i}",
            "SLURM_JOB_ID": "4242",
            "SLURM_RESTART_COUNT": "0",
            **(env_of or {}).get(i, {}),
        }
        err = open(base / f"err.{i}", "w")
        procs[i] = (subprocess.Popen(argv, cwd=base, env=env, stdout=subprocess.DEVNULL, stderr=err), err)
    out = {}
    for i, (p, err) in procs.items():
        code = p.wait(timeout=wait + 180)
        err.close()
        ops = run_dir_ops(base / f"trace.{i}", base, run) if trace else None
        out[i] = (code, (base / f"err.{i}").read_text(), ops)
    return out


def strace_works() -> bool:
    try:
        return (
            subprocess.run(["strace", "-qq", "-e", "trace=file", "true"], capture_output=True, timeout=30).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def meeting(sizes: list, before: Optional[str]) -> bool:
    """Print each node's file operations in the run directory at each size (median, most), before and now."""
    programs = ([("before", program_at(before))] if before else []) + [("now", program_at(None))]
    most = {}
    for label, text in programs:
        for n in sizes:
            with tempfile.TemporaryDirectory(prefix="kit-meet-") as tmp:
                got = meet(text, n, Path(tmp))
            codes = sorted({c for c, _, _ in got.values()})
            ops = sorted(o for _, _, o in got.values())
            most[label, n] = ops[-1]
            print(
                f"{label:6} {n:3} nodes: file operations in the run directory per node: median "
                f"{statistics.median(ops):g}, most {ops[-1]} (node 0: {got[0][2]}), all {sum(ops)}; exit codes "
                f"{codes}",
                flush=True,
            )
    grew = most["now", max(sizes)] - most["now", min(sizes)]
    met = grew <= TARGET_OPS
    print(
        f"target: the most per node at {max(sizes)} nodes at most {TARGET_OPS} over {min(sizes)} nodes: "
        f"{grew:+d}: {'met' if met else 'MISSED'}"
    )
    return met


def time_submit(h, base: Path, mode: str, attempt: int) -> tuple[float, float]:
    """(seconds from `kit submit` to both nodes running, kit's preflight phase) with env_check `mode`."""
    from ssh_fanout import STAMP, wait_stamps  # bench/ is on sys.path: run as a script
    from tests.harness.configs import ssh_cluster_config

    stamps = base / f"stamps-{mode}-{attempt}"
    stamps.mkdir()
    run_id = f"envcheck-{mode}-{attempt}"
    job = base / f"job-{mode}.yaml"
    job.write_text(
        json.dumps(
            {"name": "envcheck", "entrypoint": {"module": "train"}, "nodes": 2, "procs_per_node": 1, "env_check": mode}
        )
    )
    setup = [f'if [ -n "$KIT_RUN_ID" ]; then {STAMP.format(dir=stamps)}; exit 0; fi']
    cfg = ssh_cluster_config(h.ssh, base / "cluster.yaml", python=sys.executable, setup=setup)
    started = time.time()
    proc = subprocess.run(
        [sys.executable, "-m", "launcher", "submit", str(job), "--cluster", cfg, "--run-id", run_id],
        cwd=h.bed.path("work"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    took = wait_stamps(stamps, 2) - started
    status = json.loads(Path(h.bed.path("work"), "runs", run_id, "status.json").read_text())
    timings = (status.get("handle") or {}).get("timings") or {}  # the SSH backend's handle keeps them
    return took, timings.get("preflight_s", float("nan"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--nodes", type=int, nargs=2, default=[16, 64], help="the two sizes of the meeting")
    p.add_argument("--before", metavar="REV", help="also measure the meeting of env_check.py at git revision REV")
    p.add_argument("--no-ssh", action="store_true", help="only the meeting (no harness: needs no root)")
    args = p.parse_args()
    if not strace_works():
        print("strace is needed to count file operations (apt-get install strace)", file=sys.stderr)
        return 1
    met = meeting(args.nodes, args.before)
    if args.no_ssh:
        return 0 if met else 1
    from tests.harness.session import harness

    compileall.compile_dir(str(REPO / "launcher"), quiet=1)
    runs = {"off": [], "strict": []}
    with harness(2, ssh=True) as h:
        base = Path(h.bed.path("bench"))
        base.mkdir()
        os.environ["KIT_HOME"] = str(base / "kit-home")  # its runs stay out of your own index of runs
        time_submit(h, base, "off", -1)  # warm-up: page cache, byte-compiled modules on the hosts' side
        for attempt in range(args.repeats):
            order = ("off", "strict") if attempt % 2 == 0 else ("strict", "off")
            for mode in order:
                runs[mode].append(time_submit(h, base, mode, attempt))
            print(
                f"pair {attempt + 1}: off {runs['off'][-1][0]:.3f} s, strict {runs['strict'][-1][0]:.3f} s", flush=True
            )
    med = {m: statistics.median(t for t, _ in r) for m, r in runs.items()}
    pre = {m: statistics.median(p for _, p in r) for m, r in runs.items()}
    added = med["strict"] - med["off"]
    print(
        f"submit to both nodes running, medians: off {med['off']:.3f} s, strict {med['strict']:.3f} s; "
        f"the check adds {added:+.3f} s (ratio {med['strict'] / med['off']:.3f})"
    )
    print(
        f"kit's preflight phase, medians: off {pre['off']:.3f} s, strict {pre['strict']:.3f} s "
        f"({pre['strict'] - pre['off']:+.3f} s)"
    )
    print(f"target: adds under {TARGET_S:g} s: {'met' if added < TARGET_S else 'MISSED'}")
    return 0 if added < TARGET_S and met else 1


if __name__ == "__main__":
    sys.exit(main())
