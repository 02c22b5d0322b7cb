"""`kit runs / status / cancel`: read and act on run records (`kit logs` lives in logs.py)."""

import os
import time

from launcher import records
from launcher.backends import registry
from launcher.lookup import find_record, state_now
from launcher.status import ACTIVE, QUEUED
from launcher.supervise.failure import cause
from launcher.sweeps.record import find_sweep, is_sweep, list_sweeps, state_now as sweep_state


def _when(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def runs_cmd(args) -> int:
    found = records.list_records(args.run_root)
    if not found:
        print(f"no runs under {args.run_root}/")
        return 0
    print(f"{'RUN':<44} {'BACKEND':<8} {'STATE':<10} {'EXIT':>4}  CREATED")
    for run_id, st in found:
        code = st.exit_code
        state, _ = state_now(records.RunRecord(os.path.join(args.run_root, run_id)), st)
        print(f"{run_id:<44} {st.backend:<8} {state:<10} "
              f"{'' if code is None else code:>4}  {_when(st.created_at)}")
    for sweep_id, data in list_sweeps(args.run_root):  # its trials are the runs <sweep>-t<N> above
        code = data.get("exit_code")
        print(f"{sweep_id:<44} {'sweep':<8} {sweep_state(data):<10} "
              f"{'' if code is None else code:>4}  {_when(data.get('created_at'))}")
    return 0


def status(args) -> int:
    if is_sweep(args.run_root, args.run_id):
        from launcher.sweeps.status import print_status
        return print_status(args.run_root, args.run_id)
    record = find_record(args.run_root, args.run_id)
    st = record.read_status(strict=True)
    state, note = state_now(record, st)
    # A backend may have recorded what it just learnt (a SLURM job's hosts, end state and exit codes).
    st = record.read_status()
    print(f"run {st.run_id}  job {st.job}  backend {st.backend}  state {state}")
    if note:
        print(f"  {note}")
    codes = st.node_exit_codes
    for i, node in enumerate(st.nodes):
        code = codes[i] if i < len(codes) and codes[i] is not None else "-"
        print(f"  node {node.rank}  host {node.host}  pid {node.pid or '-'}  exit {code}")
    if st.failure:
        print(f"  first failure: {cause(st.failure)}")
    if st.exit_code is not None:
        print(f"exit code {st.exit_code}")
    return 0


def cancel(args) -> int:
    if is_sweep(args.run_root, args.run_id):
        from launcher.sweeps.cancel import cancel_sweep
        print(cancel_sweep(find_sweep(args.run_root, args.run_id)))
        return 0
    record = records.find(args.run_root, args.run_id)
    st = record.read_status(strict=True)
    run_id = st.run_id or args.run_id
    backend = registry.backend(st.backend)
    state, _ = backend.current_state(record, st)
    if state not in ACTIVE + QUEUED + ("lost",):
        code = st.exit_code
        print(f"run {run_id}: already finished ({state}{'' if code is None else f', exit code {code}'}); "
              "nothing to cancel")
        return 0
    print(backend.cancel(record, st))
    return 0
