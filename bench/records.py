"""Records at scale: `kit runs`, `kit runs --all` and `kit status RUN` over 1,000 and 10,000 run records, this
checkout against an older kit (default: a `git archive main` copy), each command a subprocess of its own.

Targets (issue 37): `kit runs` at most 1.5 s and 150 MB peak RSS over 10,000 records, `kit runs --all` at most
5 s, `kit status RUN` independent of how many runs exist.

The records are made by kit's own writers (records.create, update_status, end_attempt, run_index.remember) from
real plans of three backends, spread over a year in three projects' run roots, in the order a launch writes them
(record, indexed, running, ended); a few are left "running" under a kit that is gone (listed as lost). They go to
/dev/shm when there is one: kit fsyncs every record write, and making 10,000 on a disk takes minutes.

    .venv/bin/python bench/records.py [--sizes 1000,10000] [--baseline DIR | --baseline-ref main] [--repeat 3]
"""

import argparse
import dataclasses
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

YEAR = 365 * 86400
PROJECTS = ("project-a", "project-b", "project-c")
BACKENDS = {
    "local": {"name": "local", "backend": "local", "gpus_per_node": 0, "procs_per_node": 2},
    "ssh": {
        "name": "boxes",
        "backend": "ssh",
        "gpus_per_node": 8,
        "workdir": "/srv/kit",
        "hosts": [{"name": f"gpu-{i}", "address": f"10.0.0.{i + 10}"} for i in range(4)],
    },
    "slurm": {
        "name": "hpc",
        "backend": "slurm",
        "gpus_per_node": 4,
        "workdir": "/shared/kit",
        "slurm": {"partition": "gpu", "time": "04:00:00"},
    },
}
ENDS = [("succeeded", 0)] * 7 + [("failed", 1), ("cancelled", 130), ("timeout", 124)]


def make_records(base: str, first: int, count: int, total: int, seed: int = 37) -> None:
    """Records first .. first+count-1 (of `total`, spread over the last year) under base/<project>/runs, KIT_HOME =
    base/home, through kit's writers."""
    os.environ["KIT_HOME"] = os.path.join(base, "home")
    from launcher import records, run_index
    from launcher.planning.build import build_plan
    from launcher.spec import ClusterSpec, JobSpec, Overrides

    rng = random.Random(seed + first)
    now = time.time()
    jobs = [
        JobSpec.model_validate(
            {"name": name, "entrypoint": {"module": "train"}, "args": ["--epochs", "3"], "nodes": nodes}
        )
        for name, nodes in (("bert-small", 1), ("bert-base", 2), ("probe", 2))
    ]
    clusters = {name: ClusterSpec.model_validate(data) for name, data in BACKENDS.items()}
    templates = {
        (j.name, b): build_plan(j, c, Overrides(), "template", default_python="/opt/venv/bin/python")
        for j in jobs
        for b, c in clusters.items()
    }
    for i in range(first, first + count):
        job, backend = rng.choice(jobs), rng.choice(list(clusters))
        run_id = f"{job.name}-{i:05d}"
        # A plan of its own id, as kit submit --run-id makes it, without planning 10,000 times.
        plan = dataclasses.replace(templates[(job.name, backend)], run_id=run_id, run_dir=f"runs/{run_id}", files={})
        workdir = os.path.join(base, PROJECTS[i % len(PROJECTS)])
        record = records.create(workdir, plan, job, clusters[backend])
        created = now - YEAR * (1 - (i + rng.random()) / total)
        record.update_status(created_at=created, submitted_at=created, supervisor_pid=2**22 + 7, supervisor_start=1.0)
        run_index.remember(record.path)
        record.update_status(state="running", started_at=created + rng.uniform(1, 600))
        if i % 2000 == 1999:  # killed with its kit: the record still says running
            continue
        state, code = rng.choice(ENDS)
        record.end_attempt(
            state=state,
            exit_code=code,
            finished_at=created + rng.uniform(600, 36_000),
            node_exit_codes=[code] * len(plan.nodes),
        )


def measured(argv: list, cwd: str, env: dict) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, stdout) of one command, run by a fresh Python process of its own
    so that RUSAGE_CHILDREN's figures are this command's alone. CPU seconds (user + system) say what the command
    costs whatever else the machine is doing; wall seconds grow with the machine's load."""
    probe = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); w = time.perf_counter() - t; "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "sys.stdout.write(f'{w} {u.ru_utime + u.ru_stime} {u.ru_maxrss}\\n' + r.stdout); "
        "sys.exit(r.returncode)"
    )
    r = subprocess.run([sys.executable, "-c", probe, *argv], cwd=cwd, env=env, capture_output=True, text=True)
    head, _, out = r.stdout.partition("\n")
    if not head or "Traceback" in r.stderr:  # `kit status` exits with the run's own code: any is an answer
        raise SystemExit(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    wall, cpu, kb = head.split()
    return float(wall), float(cpu), int(kb) / 1024, out


def timed(code: str, words: list, cwd: str, home: str, repeat: int) -> tuple[float, float, float, int]:
    """(median wall s, median CPU s, peak RSS MB, lines printed) of `python -m launcher WORDS`, `code` on
    PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": code, "KIT_HOME": home}
    runs = [measured([sys.executable, "-m", "launcher", *words], cwd, env) for _ in range(repeat)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        max(r[2] for r in runs),
        len(runs[-1][3].splitlines()),
    )


def baseline_copy(ref: str, where: str) -> str:
    out = os.path.join(where, f"kit-{ref}")
    os.makedirs(out)
    archive = subprocess.run(["git", "-C", REPO, "archive", ref, "launcher"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="numbers of records to measure at, ascending")
    parser.add_argument("--baseline", help="a directory holding the older kit's launcher/ package")
    parser.add_argument("--baseline-ref", default="main", help="git ref to archive as the baseline (default main)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each command with this checkout")
    parser.add_argument("--baseline-repeat", type=int, default=1, help="timed runs with the baseline (slow)")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--keep", action="store_true", help="leave the records there")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    scratch = tempfile.mkdtemp(prefix="kit-records-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        old = None if args.no_baseline else (args.baseline or baseline_copy(args.baseline_ref, scratch))
        base = os.path.join(scratch, "records")
        home = os.path.join(base, "home")
        elsewhere = os.path.join(base, "elsewhere")  # no ./runs: every run found through the index
        os.makedirs(elsewhere)
        print(f"records in {base}; kit home {home}; baseline {old or '-'}", flush=True)
        made, table = 0, []
        for n in sizes:
            t = time.perf_counter()
            make_records(base, made, n - made, sizes[-1])
            made = n
            print(f"{n} records made in {time.perf_counter() - t:.0f} s", flush=True)
            probe_id = min(n for n in os.listdir(os.path.join(home, "index")) if not n.startswith("."))
            commands = [
                ("kit runs", ["runs"]),
                ("kit runs --all", ["runs", "--all"]),
                ("kit runs --state failed", ["runs", "--state", "failed"]),
                (f"kit status {probe_id}", ["status", probe_id]),
                ("kit status (latest)", ["status"]),
            ]
            for label, words in commands:
                new = timed(REPO, words, elsewhere, home, args.repeat)
                # The older kit has no --all: its `kit runs` lists every run.
                before = (
                    timed(old, [w for w in words if w != "--all"], elsewhere, home, args.baseline_repeat)
                    if old
                    else None
                )
                table.append((n, label, before, new))
                print(_line(n, label, before, new), flush=True)
            entries = os.path.join(home, "index", ".entries")
            os.unlink(entries)  # an index from before this change: links only, every entry missing
            table.append((n, "kit runs (no entries yet)", None, timed(REPO, ["runs"], elsewhere, home, 1)))
            print(_line(*table[-1]), flush=True)
        print()
        print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        print(
            f"{'records':>7}  {'command':<32} {'before s':>8} {'cpu s':>6} {'MB':>4}  {'after s':>8} {'cpu s':>6} "
            f"{'MB':>4}  lines"
        )
        for row in table:
            print(_line(*row))
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _line(n, label, before, new) -> str:
    b = f"{before[0]:8.2f} {before[1]:6.2f} {before[2]:4.0f}" if before else f"{'-':>8} {'-':>6} {'-':>4}"
    return f"{n:>7}  {label:<32} {b}  {new[0]:8.2f} {new[1]:6.2f} {new[2]:4.0f}  {new[3]}"


if __name__ == "__main__":
    raise SystemExit(main())
