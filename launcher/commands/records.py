"""`kit runs / status / logs / cancel`: read and act on run records."""

import os
import signal
import sys
import time

from launcher import runs
from launcher.errors import KitError
from launcher.procs import run_processes, start_time, terminate_groups


def _record(args) -> runs.RunRecord:
    run_id = args.run_id or runs.latest(args.run_root)
    if run_id is None:
        raise KitError(f"no runs under {args.run_root}/ yet; start one with `kit submit`")
    return runs.find(args.run_root, run_id)


def _when(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def runs_cmd(args) -> int:
    records = runs.list_records(args.run_root)
    if not records:
        print(f"no runs under {args.run_root}/")
        return 0
    print(f"{'RUN':<44} {'BACKEND':<8} {'STATE':<10} {'EXIT':>4}  CREATED")
    for run_id, st in records:
        code = st.get("exit_code")
        print(f"{run_id:<44} {st.get('backend', '?'):<8} {st.get('state', '?'):<10} "
              f"{'' if code is None else code:>4}  {_when(st.get('created_at'))}")
    return 0


def status(args) -> int:
    record = _record(args)
    st = record.read_status()
    print(f"run {st.get('run_id')}  job {st.get('job')}  backend {st.get('backend')}  state {st.get('state')}")
    codes = st.get("node_exit_codes") or []
    for i, node in enumerate(st.get("nodes", [])):
        code = codes[i] if i < len(codes) else "-"
        print(f"  node {node['rank']}  host {node['host']}  pid {node['pid']}  exit {code}")
    if st.get("exit_code") is not None:
        print(f"exit code {st['exit_code']}")
    return 0


def logs(args) -> int:
    record = _record(args)
    names = sorted(n for n in os.listdir(record.path) if n.startswith("node") and n.endswith(".log"))
    if args.node is not None:
        names = [n for n in names if n == f"node{args.node}.log"]
        if not names:
            raise KitError(f"--node {args.node}: no such node log in {record.path}")
    for name in names:
        with open(os.path.join(record.path, name), encoding="utf-8", errors="replace") as f:
            sys.stdout.write(f"==> {name} <==\n{f.read()}")
    return 0


def cancel(args) -> int:
    record = runs.find(args.run_root, args.run_id)
    st = record.read_status()
    pgids = [n["pgid"] for n in st.get("nodes", [])]
    mine = run_processes(st["run_id"], pgids)
    supervisor = st.get("supervisor_pid")
    if supervisor and st.get("state") == "running" and start_time(supervisor) == st.get("supervisor_start"):
        # The supervising `kit submit` tears down and records the outcome itself.
        try:
            os.kill(supervisor, signal.SIGTERM)
        except ProcessLookupError:
            pass
    if mine:
        terminate_groups(sorted({g for g in map(_pgid, mine) if g is not None}), grace=10.0)
    if st.get("state") in ("starting", "running"):
        time.sleep(0.5)
        if record.read_status().get("state") in ("starting", "running"):
            record.update_status(state="cancelled", finished_at=time.time())
    print(f"run {st['run_id']}: cancelled ({len(mine)} process(es) stopped)")
    return 0


def _pgid(pid: int):
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


COMMANDS = {"runs": runs_cmd, "status": status, "logs": logs, "cancel": cancel}
