"""kit at scale: SSH and SLURM worlds of N namespace hosts (tests/harness), one table and one plot.

For each N (default 2, 8, 32) one testbed of N hosts runs sshd and slurmd on every host; on it, per backend, one
run of a cheap probe (tests/launcher/scripts/world_probe.py: stamp, import torch, gloo all-reduce, stamp, stay)
with 1 process per node, and for SSH a second run stopped by Ctrl-C as soon as the first rank has started (the
ranks are still starting: item 6 of issue 37). Columns:

  started s    submit -> every rank's first line ran (its stamp, before `import torch`)
  world s      submit -> every rank has all-reduced (the world formed, sum checked)
  stop s       SSH: Ctrl-C -> no process of the run on any host. SLURM: Ctrl-C only stops following (the job keeps
               running, by design), so: `kit cancel` -> no process of the run (nor its slurmstepd) on any host
  kit cpu s    CPU seconds of the `kit submit` process and what it waited for (/usr/bin/time: user + sys)
  kit MB       peak RSS of the largest `kit submit` process (/usr/bin/time %M)
  sched q/s    SLURM RPCs by kit (sbatch, squeue, scontrol but `show hostnames`, sacct, scancel) per second of
               following (submit -> Ctrl-C), counted by wrappers first on PATH that log and exec the real command
  file ops     file syscalls (strace's `trace=file` class: open, stat, access, unlink, ...) naming a path in the run
               directory (runs/<id>), by kit and by every process the hosts' sshd or slurmd started (their tasks,
               the node checks, the ranks): `strace -f -e trace=file` attached to kit (once its python runs,
               before it plans) and to each host's sshd or slurmd (before the submit)
  ops/node     file ops / N
  dry lines    lines of `kit submit --dry-run` for the same job and cluster
  early stop s SSH only: Ctrl-C once the first rank started -> nothing of the run on any host; with kit's peak
               RSS in that run (target for 32 hosts: <= 20 s, <= 100 MB)

The tracers stop every syscall of what they trace (importing torch under strace took 2x as long here): the times
are those of a traced cluster, an upper bound. The plot (bench/scale.png) draws each figure against N, and a line
to 1,024 nodes from the growth measured between the two largest N (a power law through them).

    .venv/bin/python bench/scale.py [--sizes 2,8,32] [--backends ssh,slurm] [--json FILE] [--plot FILE]
    .venv/bin/python bench/scale.py --from-json bench/scale.json      (table and plot again, nothing run)
"""

import argparse
import traceback
import compileall
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from tests.harness.configs import slurm_cluster_config, ssh_cluster_config  # noqa: E402
from tests.harness.session import harness  # noqa: E402

PROBE = REPO / "tests" / "launcher" / "scripts" / "world_probe.py"
SLURM_COMMANDS = ("sbatch", "squeue", "scontrol", "sacct", "scancel", "sinfo", "srun")
LOCAL_ONLY = ("scontrol show hostnames",)  # parsed by the client, no RPC to slurmctld
COLUMNS = [
    ("started_s", "started s", "{:.1f}"),
    ("world_s", "world s", "{:.1f}"),
    ("stop_s", "stop s", "{:.1f}"),
    ("kit_cpu_s", "kit cpu s", "{:.1f}"),
    ("kit_mb", "kit MB", "{:.0f}"),
    ("sched_qps", "sched q/s", "{:.2f}"),
    ("file_ops", "file ops", "{:.0f}"),
    ("ops_per_node", "ops/node", "{:.0f}"),
    ("dry_lines", "dry lines", "{:.0f}"),
    ("early_stop_s", "early stop s", "{:.1f}"),
    ("early_kit_mb", "early MB", "{:.0f}"),
]


LIVE_TRACERS: list[subprocess.Popen] = []  # stopped by _clean_up after a failed run


def trace_daemons(h, pids: list[int], out: Path) -> list[subprocess.Popen]:
    """strace attached to each host's daemon (sshd or slurmd) and to all it starts from then on: file syscalls
    only, lines naming a run directory kept (a grep fed by strace: the whole trace is millions of lines)."""
    procs = [
        subprocess.Popen(
            ["strace", "-f", "-qq", "-e", "trace=file", "-o", f"|grep -F runs/ >> {out}.{pid}", "-p", str(pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for pid in pids
    ]
    LIVE_TRACERS.extend(procs)
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p in LIVE_TRACERS:
            LIVE_TRACERS.remove(p)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)  # strace detaches from its tracees and exits
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def wrappers(where: Path, log: Path) -> str:
    """Scripts named like the SLURM commands, each logging `time host argv` then exec'ing the real one."""
    where.mkdir()
    for name in SLURM_COMMANDS:
        real = shutil.which(name)
        if real is None:
            continue
        script = where / name
        script.write_text(f'#!/bin/sh\necho "$(date +%s.%N) $(hostname) {name} $*" >> {log}\nexec {real} "$@"\n')
        script.chmod(0o755)
    return str(where)


def stamps(d: Path, kind: str) -> list[str]:
    return [p.read_text() for p in d.iterdir() if p.name.startswith(kind + "-") and not p.name.endswith(".tmp")]


def wait(predicate, timeout: float, what: str, proc=None, interval=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"kit exited {proc.returncode} while waiting for {what}:\n{proc.stdout.read()[-3000:]}")
        time.sleep(interval)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def run_processes(h, run_id: str, job_id: str = "") -> list[str]:
    """What of the run lives on any host: its id in a process's environment or command line, its probe, its
    job's slurmstepd."""
    found, marker = [], f"KIT_RUN_ID={run_id}".encode()
    for host in h.bed.hosts:
        for p in host.processes():
            line = " ".join(p["cmdline"])
            try:
                env = open(f"/proc/{p['pid']}/environ", "rb").read()
            except OSError:
                env = b""
            if marker in env.split(b"\0") or run_id in line or (job_id and f"[{job_id}." in line):
                found.append(f"{host.name}: {line[:100]}")
    return found


def kit_argv(usage: Path, *argv) -> list[str]:
    """kit under /usr/bin/time: its CPU seconds and peak RSS."""
    return ["/usr/bin/time", "-f", "%U %S %M", "-o", str(usage), sys.executable, "-m", "launcher", *argv]


def trace_kit(pid: int, run_id: str, out: Path) -> subprocess.Popen:
    """strace attached to kit (and what it forks from then on), once its python runs: before it has planned, so
    before the run directory exists. (Started under strace instead, kit ignored Ctrl-C: seen here twice.)"""
    proc = subprocess.Popen(
        ["strace", "-f", "-qq", "-e", "trace=file", "-o", f"|grep -F runs/{run_id} > {out}", "-p", str(pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    LIVE_TRACERS.append(proc)
    return proc


def kit_pid(tracer_proc) -> int:
    """The python of `kit submit` under time."""
    import psutil

    def find():
        try:
            kids = psutil.Process(tracer_proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return None
        return next((k.pid for k in kids if "launcher" in k.cmdline()), None)

    return wait(find, 30, "kit to start")


def count(path: Path, needle: str) -> int:
    try:
        return sum(1 for line in open(path, errors="replace") if needle in line)
    except OSError:
        return 0


def one_run(h, base: Path, backend: str, n: int, early: bool = False, trace: bool = True) -> dict:
    run_id = f"scale-{backend}-{n}" + ("-early" if early else "")
    work = Path(h.bed.path("work"))
    d = base / run_id
    d.mkdir()
    (d / "stamps").mkdir()
    job = d / "job.yaml"
    job.write_text(
        json.dumps(
            {
                "name": "scale",
                "entrypoint": {"script": str(PROBE)},
                "args": [str(d / "stamps")],
                "nodes": n,
                "procs_per_node": 1,
            }
        )
    )
    if backend == "ssh":
        cluster = ssh_cluster_config(h.ssh, d / "cluster.yaml", python=sys.executable)
        # Logins under the tracer and a shared machine's load: 32 hosts' handshakes took more than the harness's
        # 5 s here (paramiko: "No existing session" on 11 of 32), so the bench allows what a slow site would.
        data = yaml.safe_load(open(cluster))
        data["ssh"]["connect_timeout"] = 30.0
        with open(cluster, "w") as f:
            yaml.safe_dump(data, f, sort_keys=False)
        extra = []
    else:
        cluster = slurm_cluster_config(h.slurm, d / "cluster.yaml", python=sys.executable)
        extra = ["--gpus", "0"]
    log = d / "sched.log"
    env = {
        **os.environ,
        "PATH": wrappers(d / "bin", log) + os.pathsep + os.environ["PATH"],
        "KIT_HOME": str(base / "kit-home"),
    }
    if h.slurm is not None:
        env["SLURM_CONF"] = h.slurm.conf
    argv = ["submit", str(job), "--cluster", cluster, "--run-id", run_id, *extra]
    row: dict = {}
    if not early:
        dry = subprocess.run(
            [sys.executable, "-m", "launcher", *argv, "--dry-run"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if dry.returncode != 0:
            raise RuntimeError(dry.stderr)
        row["dry_lines"] = len(dry.stdout.splitlines())
        log.write_text("")  # the dry-run makes no scheduler call; counted from the submit on
    daemons = list((h.ssh.sshd_pids if backend == "ssh" else h.slurm.slurmd_pids).values())
    tracers = trace_daemons(h, daemons, d / "hosts.trace") if trace else []
    time.sleep(1)  # strace has attached
    started = time.time()
    proc = subprocess.Popen(
        kit_argv(d / "usage", *argv), cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    pid = kit_pid(proc)
    kit_tracer = trace_kit(pid, run_id, d / "kit.trace") if trace else None
    if early:
        wait(lambda: stamps(d / "stamps", "started"), 600, "the first rank to start", proc)
    else:
        wait(lambda: len(stamps(d / "stamps", "started")) == n, 900, f"{n} ranks to start", proc)
        row["started_s"] = max(float(s.split()[0]) for s in stamps(d / "stamps", "started")) - started
        wait(lambda: len(stamps(d / "stamps", "world")) == n, 900, f"{n} ranks to all-reduce", proc)
        worlds = stamps(d / "stamps", "world")
        row["world_s"] = max(float(s.split()[0]) for s in worlds) - started
        sums = {tuple(s.split()[1:]) for s in worlds}
        if sums != {(str(n), str(n * (n + 1) // 2))}:
            raise RuntimeError(f"the world is not one world of {n}: {sums}")
    interrupted = time.time()
    os.kill(pid, signal.SIGINT)
    try:
        output, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        import psutil

        tree = [
            f"{c.pid} {c.status()} {' '.join(c.cmdline())[:150]}"
            for c in psutil.Process(proc.pid).children(recursive=True)
        ]
        proc.kill()
        raise RuntimeError(f"kit did not end within 300 s of Ctrl-C; under the tracer: {tree}") from None
    if kit_tracer is not None:
        stop([kit_tracer])
    followed = interrupted - started
    job_id = ""
    if backend == "slurm":
        status = json.loads((work / "runs" / run_id / "status.json").read_text())
        job_id = str((status.get("handle") or {}).get("job_id") or "")
        stop_from = time.time()
        cancel = subprocess.run(
            [sys.executable, "-m", "launcher", "cancel", run_id],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if cancel.returncode != 0:
            raise RuntimeError(cancel.stdout + cancel.stderr)
    else:
        stop_from = interrupted
        if proc.returncode != 130:
            raise RuntimeError(f"kit exited {proc.returncode} after Ctrl-C:\n{output[-3000:]}")
    seen: list = []  # (seconds after the stop, what was still there): what the stop waits for

    def gone():
        left = run_processes(h, run_id, job_id)
        if left:
            seen.append((round(time.time() - stop_from, 1), left))
        return not left

    wait(gone, 300, "nothing of the run on any host", interval=0.2)
    row["early_stop_s" if early else "stop_s"] = time.time() - stop_from
    if seen:
        at, left = seen[-1]
        row["early_last_left" if early else "last_left"] = f"{at} s: {len(left)} left, e.g. {left[:3]}"
        row["early_left_at_5s" if early else "left_at_5s"] = next((len(x) for t, x in seen if t >= 5), 0)
    stop(tracers)
    user, system, max_kb = (d / "usage").read_text().split()[-3:]
    row["early_kit_mb" if early else "kit_mb"] = int(max_kb) / 1024
    if early:
        row["ranks_started_at_ctrl_c"] = len(stamps(d / "stamps", "started"))
        return row
    row["kit_cpu_s"] = float(user) + float(system)
    calls = [
        c
        for c in (line.split(None, 2) for line in log.read_text().splitlines())  # an argument's own
        if len(c) == 3 and c[0].replace(".", "").isdigit()
    ]  # newlines: not a call
    ours = [c for c in calls if c[1] == h.bed.controller and float(c[0]) <= interrupted]
    rpcs = [c for c in ours if not any(c[2].startswith(x) for x in LOCAL_ONLY)]
    if backend == "slurm":
        row["sched_qps"] = len(rpcs) / followed
        row["sched_calls"] = len(rpcs)
        row["sched_calls_in_tasks"] = len([c for c in calls if c[1] != h.bed.controller])
    needle = f"runs/{run_id}"
    kit_ops = count(d / "kit.trace", needle)
    host_ops = sum(count(Path(f"{d / 'hosts.trace'}.{pid}"), needle) for pid in daemons)
    if trace:
        row.update(file_ops=kit_ops + host_ops, kit_file_ops=kit_ops, ops_per_node=(kit_ops + host_ops) / n)
    return row


def _clean_up(h) -> None:
    """After a failed run: kill what its runs left on the hosts (the hosts' own processes but their daemons and
    init), so the next run starts on idle hosts. Only this harness's hosts' PID namespaces are touched."""
    stop(LIVE_TRACERS[:])
    keep = set(getattr(h.ssh, "sshd_pids", {}).values()) | set(getattr(h.slurm, "slurmd_pids", {}).values())
    for host in h.bed.hosts:
        for p in host.processes():
            if (
                p["pid"] not in keep
                and p["pid"] != host.init_pid
                and p["nspid"] > 2
                and not any(x in " ".join(p["cmdline"]) for x in ("sshd", "slurmd", "strace", "grep"))
            ):
                try:
                    os.kill(p["pid"], signal.SIGKILL)
                except ProcessLookupError:
                    pass


def table(rows: list[dict]) -> str:
    head = f"{'backend':<7} {'N':>3} " + " ".join(f"{label:>{max(len(label), 8)}}" for _, label, _ in COLUMNS)
    lines = [head]
    for r in rows:
        cells = []
        for key, label, fmt in COLUMNS:
            v = r.get(key)
            cells.append(f"{(fmt.format(v) if v is not None else '-'):>{max(len(label), 8)}}")
        lines.append(f"{r['backend']:<7} {r['nodes']:>3} " + " ".join(cells))
    return "\n".join(lines)


def extrapolate(xs: list[float], ys: list[float], to: float) -> tuple[float, float]:
    """A power law y = a x^b through the two largest sizes (the growth where it matters); b = 0 if either y <= 0."""
    (x0, y0), (x1, y1) = sorted(zip(xs, ys))[-2:]
    b = math.log(y1 / y0) / math.log(x1 / x0) if y0 > 0 and y1 > 0 and x1 != x0 else 0.0
    return y1 * (to / x1) ** b, b


def plot(rows: list[dict], path: Path, to: int = 1024) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [(k, label) for k, label, _ in COLUMNS if any(r.get(k) is not None for r in rows)]
    cols = 3
    fig, axes = plt.subplots(math.ceil(len(keys) / cols), cols, figsize=(5 * cols, 3.6 * math.ceil(len(keys) / cols)))
    for ax, (key, label) in zip(axes.flat, keys):
        for backend, color in (("ssh", "tab:blue"), ("slurm", "tab:orange")):
            pts = sorted((r["nodes"], r[key]) for r in rows if r["backend"] == backend and (r.get(key) or 0) > 0)
            if not pts:
                continue
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            ax.plot(xs, ys, "o-", color=color, label=backend)
            if len(pts) >= 2:
                at, b = extrapolate(xs, ys, to)
                grid = [xs[-1] * (to / xs[-1]) ** (i / 20) for i in range(21)]
                ax.plot(grid, [ys[-1] * (g / xs[-1]) ** b for g in grid], "--", color=color, alpha=0.6)
                ax.annotate(f"{at:.3g} (N^{b:.2f})", (to, at), fontsize=8, color=color, ha="right")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(label)
        ax.set_xlabel("nodes")
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.suptitle(f"kit at scale: measured (solid), extrapolated to {to} nodes (dashed)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="2,8,32", help="comma-separated host counts (default 2,8,32)")
    p.add_argument("--backends", default="ssh,slurm")
    p.add_argument("--no-early", action="store_true", help="skip the SSH run stopped while the ranks start")
    p.add_argument("--early-only", action="store_true", help="SSH: only the run stopped while the ranks start")
    p.add_argument("--no-trace", action="store_true", help="no strace (no file ops column): untraced times")
    p.add_argument("--json", type=Path, default=REPO / "bench" / "scale.json", help="rows written here too")
    p.add_argument("--plot", type=Path, default=REPO / "bench" / "scale.png")
    p.add_argument("--from-json", type=Path, help="measure nothing: the table and plot of rows written before")
    args = p.parse_args()
    if args.from_json:
        rows = json.loads(args.from_json.read_text())
        print(table(rows))
        plot(rows, args.plot)
        return 0
    sizes = [int(x) for x in args.sizes.split(",")]
    backends = args.backends.split(",")
    compileall.compile_dir(str(REPO / "launcher"), quiet=1)  # as a pip install does (PYTHONDONTWRITEBYTECODE)
    rows = []
    print(
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} cores, load before "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    for n in sizes:
        up = time.time()
        with harness(n, ssh="ssh" in backends, slurm="slurm" in backends) as h:
            print(f"{n} hosts up in {time.time() - up:.1f} s", flush=True)
            base = Path(h.bed.path("bench"))
            base.mkdir()
            for backend in backends:
                row = {"backend": backend, "nodes": n}
                kinds = (False, True) if backend == "ssh" and not args.no_early else (False,)
                for early in (True,) if args.early_only and backend == "ssh" else kinds:
                    try:  # a failed run is a row saying so; the next still runs on the same hosts
                        row.update(one_run(h, base, backend, n, early=early, trace=not args.no_trace))
                    except Exception as e:
                        traceback.print_exc()
                        row["early_error" if early else "error"] = str(e)[-1500:]
                        _clean_up(h)
                row["load"] = os.getloadavg()[0]
                rows.append(row)
                print(json.dumps(row), flush=True)
        print(f"{n} hosts: torn down, nothing left (checked); load {os.getloadavg()[0]:.2f}", flush=True)
    print(table(rows))
    args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if len(sizes) >= 2:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
