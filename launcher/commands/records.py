"""`kit runs / status / cancel`: read and act on run records (`kit logs` lives in logs.py)."""

import time

from launcher import runs
from launcher.commands.logs import logs
from launcher.errors import KitError
from launcher.backends import get_backend
from launcher.supervise import liveness
from launcher.sweep.record import find_sweep, is_sweep, list_sweeps, state_now


def _state(st: dict) -> tuple[str, str]:
    try:
        return get_backend(st.get("backend", "local")).current_state(st)
    except KitError:
        return st.get("state", "?"), ""


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
        state, _ = _state(st)
        print(f"{run_id:<44} {st.get('backend', '?'):<8} {state:<10} "
              f"{'' if code is None else code:>4}  {_when(st.get('created_at'))}")
    for sweep_id, data in list_sweeps(args.run_root):  # its trials are the runs <sweep>-t<N> above
        code = data.get("exit_code")
        print(f"{sweep_id:<44} {'sweep':<8} {state_now(data):<10} "
              f"{'' if code is None else code:>4}  {_when(data.get('created_at'))}")
    return 0


def status(args) -> int:
    if is_sweep(args.run_root, args.run_id):
        from launcher.sweep.status import print_status
        return print_status(args.run_root, args.run_id)
    record = _record(args)
    st = record.read_status(strict=True)
    state, note = _state(st)
    # A backend may have recorded what it just learnt (a SLURM job's hosts, end state and exit codes).
    st = {**st, **record.read_status()}
    print(f"run {st.get('run_id')}  job {st.get('job')}  backend {st.get('backend')}  state {state}")
    if note:
        print(f"  {note}")
    codes = st.get("node_exit_codes") or []
    for i, node in enumerate(st.get("nodes", [])):
        code = codes[i] if i < len(codes) else "-"
        print(f"  node {node['rank']}  host {node['host']}  pid {node['pid']}  exit {code}")
    failure = st.get("failure")
    if failure:
        rank = f" rank {failure['rank']}" if failure.get("rank") is not None else ""
        print(f"  first failure: node {failure['node']} ({failure['host']}){rank} exited {failure['code']} "
              f"({failure['meaning']}): {failure['last_line']}")
    if st.get("exit_code") is not None:
        print(f"exit code {st['exit_code']}")
    return 0


def cancel(args) -> int:
    if is_sweep(args.run_root, args.run_id):
        from launcher.sweep.cancel import cancel_sweep
        print(cancel_sweep(find_sweep(args.run_root, args.run_id)))
        return 0
    record = runs.find(args.run_root, args.run_id)
    st = record.read_status(strict=True)
    run_id = st.get("run_id", args.run_id)
    backend = get_backend(st.get("backend", "local"))
    state, _ = backend.current_state(st)
    if state not in liveness.ACTIVE + ("lost", "pending", "requeued"):
        code = st.get("exit_code")
        print(f"run {run_id}: already finished ({state}{'' if code is None else f', exit code {code}'}); "
              "nothing to cancel")
        return 0
    print(backend.cancel(record, st))
    return 0


COMMANDS = {"runs": runs_cmd, "status": status, "logs": logs, "cancel": cancel}
