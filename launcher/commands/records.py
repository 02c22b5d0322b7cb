"""`kit runs / status / cancel`: read and act on run records (`kit logs` lives in logs.py)."""

import time

from launcher import runs
from launcher.commands.logs import logs
from launcher.errors import KitError
from launcher.supervise import liveness, tree

CANCEL_MARGIN = 30.0  # on top of the grace period: the supervisor's own shutdown and the log flush


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
        state, _ = liveness.current_state(st)
        print(f"{run_id:<44} {st.get('backend', '?'):<8} {state:<10} "
              f"{'' if code is None else code:>4}  {_when(st.get('created_at'))}")
    return 0


def status(args) -> int:
    record = _record(args)
    st = record.read_status(strict=True)
    state, note = liveness.current_state(st)
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


def _wait_gone(procs, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = [p for p in procs if p.is_running() and p.status() != "zombie"]
        if not procs:
            return True
        time.sleep(0.2)
    return False


def cancel(args) -> int:
    record = runs.find(args.run_root, args.run_id)
    st = record.read_status(strict=True)
    run_id = st.get("run_id", args.run_id)
    state, _ = liveness.current_state(st)
    grace = float(st.get("teardown_grace") or 40.0)
    if state not in liveness.ACTIVE + ("lost",):
        code = st.get("exit_code")
        print(f"run {run_id}: already finished ({state}{'' if code is None else f', exit code {code}'}); "
              "nothing to cancel")
        return 0
    boss = liveness.supervisor(st)
    if boss is not None:
        # The supervisor tears its nodes down (ranks get their grace period) and records the outcome.
        print(f"run {run_id}: stopping (ranks get up to {grace:.0f} s to save)")
        boss.terminate()
        _wait_gone([boss], grace + CANCEL_MARGIN)
    dogs = liveness.live_watchdogs(st)
    for dog in dogs:
        dog.terminate()  # a watchdog stops its node on SIGTERM, with the grace period
    _wait_gone(dogs, grace + CANCEL_MARGIN)
    left = tree.run_processes(run_id)  # last resort: anything still carrying this run's id
    if left:
        tree.terminate(left, grace=grace)
    if record.read_status().get("state") in liveness.ACTIVE:
        record.update_status(state="cancelled", finished_at=time.time())
    print(f"run {run_id}: cancelled; no process of it is left")
    return 0


COMMANDS = {"runs": runs_cmd, "status": status, "logs": logs, "cancel": cancel}
