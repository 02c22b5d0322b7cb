"""`kit logs RUN [--node N] [--follow]`: print a run's node logs, and with --follow keep printing until it ends."""

import os
import sys
import time

from launcher import records
from launcher.backends import registry
from launcher.lookup import find_record, state_now
from launcher.errors import KitError
from launcher.status import NOT_OVER
from launcher.supervise.log_lines import node_logs, print_new_lines

FOLLOW_POLL = 0.3


def _node_logs(record: records.RunRecord, node) -> list[tuple[int, str]]:
    found = node_logs(record.path, node)
    if node is not None and not found:
        raise KitError(f"--node {node}: no such node log in {record.path}")
    return found


def _print_whole(paths) -> None:
    for rank, path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            sys.stdout.write(f"==> {os.path.basename(path)} <==\n{f.read()}")


def fetch(record: records.RunRecord) -> None:
    """A backend whose node logs live elsewhere (SLURM through a login host) copies them into the record."""
    status = record.read_status()
    registry.backend(status.backend).fetch_logs(record, status)


def _follow(record: records.RunRecord, node) -> None:
    """Every node's lines as they come, tagged like the live console, until the run ends and the logs drain."""
    offsets, pending = {}, {}
    while True:
        running = state_now(record)[0] in NOT_OVER
        fetch(record)
        print_new_lines(record.path, node, offsets, pending)
        if not running:
            return
        time.sleep(FOLLOW_POLL)


def _refuse_sweep(args) -> None:
    """A sweep has no logs of its own: each trial is a run with its own."""
    from launcher.sweeps.record import find_sweep, is_sweep
    if args.run_id and is_sweep(args.run_root, args.run_id):
        trials = [t["run_id"] for t in find_sweep(args.run_root, args.run_id).read().get("trials", [])]
        shown = ", ".join(trials[:3]) + (", ..." if len(trials) > 3 else "")
        raise KitError(f"{args.run_id} is a sweep; its logs are its trials': kit logs <trial> ({shown}); "
                       f"kit sweep status {args.run_id} lists them")


def logs(args) -> int:
    _refuse_sweep(args)
    record = find_record(args.run_root, args.run_id)
    fetch(record)
    paths = _node_logs(record, args.node)   # a --node without a log is one line, before any following
    if getattr(args, "follow", False):
        _follow(record, args.node)
        return 0
    _print_whole(paths)
    return 0
