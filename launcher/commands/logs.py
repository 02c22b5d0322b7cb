"""`kit logs RUN [--node N] [--follow]`: print a run's node logs, and with --follow keep printing until it ends."""

import os
import sys
import time

from launcher import runs
from launcher.errors import KitError
from launcher.plan.tags import is_tagged, node_tag
from launcher.supervise import liveness
from launcher.supervise.noise import NoiseFilter

FOLLOW_POLL = 0.3


def _node_logs(record: runs.RunRecord, node) -> list[tuple[int, str]]:
    names = sorted((int(n[4:-4]), n) for n in os.listdir(record.path)
                   if n.startswith("node") and n.endswith(".log") and n[4:-4].isdigit())
    if node is not None:
        names = [(r, n) for r, n in names if r == node]
        if not names:
            raise KitError(f"--node {node}: no such node log in {record.path}")
    return [(r, os.path.join(record.path, n)) for r, n in names]


def _print_whole(paths) -> None:
    for rank, path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            sys.stdout.write(f"==> {os.path.basename(path)} <==\n{f.read()}")


def _still_running(record: runs.RunRecord) -> bool:
    from launcher.commands.records import _state
    state, _ = _state(record.read_status())
    return state in liveness.NOT_OVER


def print_new_lines(record: runs.RunRecord, node, offsets: dict, pending: dict, noise=None) -> None:
    """The node logs' complete lines written since the last call, tagged like the live console. With `noise`
    (a dict, one NoiseFilter per log kept in it), the launcher's tracebacks, tables and log lines stay in the
    logs, as on the local backend's console; without it every line is shown (`kit logs`)."""
    for rank, path in _node_logs(record, node) if os.path.isdir(record.path) else []:
        with open(path, "rb") as f:
            f.seek(offsets.get(path, 0))
            data = pending.get(path, b"") + f.read()
            offsets[path] = f.tell()
        *lines, pending[path] = data.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", errors="replace")
            line = line if is_tagged(line, rank) else f"{node_tag(rank)} {line}"
            shown = [line] if noise is None else noise.setdefault(path, NoiseFilter()).feed(line)
            sys.stdout.write("".join(ln + "\n" for ln in shown))
        sys.stdout.flush()


def flush_held(noise: dict) -> None:
    """What the noise filters still hold at the end of a run (a traceback that was the job's own)."""
    for held in noise.values():
        sys.stdout.write("".join(ln + "\n" for ln in held.finish()))
    sys.stdout.flush()


def _fetch(record: runs.RunRecord) -> None:
    """A backend whose node logs live elsewhere (SLURM through a login host) copies them into the record."""
    from launcher.backends import get_backend
    status = record.read_status()
    backend = get_backend(status.get("backend", "local"))
    if hasattr(backend, "fetch_logs"):
        backend.fetch_logs(record, status)


def _follow(record: runs.RunRecord, node) -> None:
    """Every node's lines as they come, tagged like the live console, until the run ends and the logs drain."""
    offsets, pending = {}, {}
    while True:
        running = _still_running(record)
        _fetch(record)
        print_new_lines(record, node, offsets, pending)
        if not running:
            return
        time.sleep(FOLLOW_POLL)


def _refuse_sweep(args) -> None:
    """A sweep has no logs of its own: each trial is a run with its own."""
    from launcher.sweep.record import find_sweep, is_sweep
    if args.run_id and is_sweep(args.run_root, args.run_id):
        trials = [t["run_id"] for t in find_sweep(args.run_root, args.run_id).read().get("trials", [])]
        shown = ", ".join(trials[:3]) + (", ..." if len(trials) > 3 else "")
        raise KitError(f"{args.run_id} is a sweep; its logs are its trials': kit logs <trial> ({shown}); "
                       f"kit sweep status {args.run_id} lists them")


def logs(args) -> int:
    from launcher.commands.records import _record
    _refuse_sweep(args)
    record = _record(args)
    _fetch(record)
    paths = _node_logs(record, args.node)   # a --node without a log is one line, before any following
    if getattr(args, "follow", False):
        _follow(record, args.node)
        return 0
    _print_whole(paths)
    return 0
