"""`kit logs RUN [--node N] [--rank R] [--tail N] [--follow]`: print a run's node logs (or one rank's lines, or
their last lines), and with --follow keep printing until the run ends."""

import os
import sys
import time

from launcher import records
from launcher.backends import registry
from launcher.core.listing import find_record
from launcher.core.lookup import resolve_id, root_of, state_now
from launcher.errors import KitError
from launcher.status import NOT_OVER
from launcher.planning.tags import PROGRESS_MARK, is_tagged, node_tag
from launcher.supervise.log_lines import node_logs, of_rank, print_new_lines
from launcher.supervise.log_tail import complete_end, last_lines, lines_of
from launcher.core.waiting import end_code

FOLLOW_POLL = 0.3


def _node_logs(record: records.RunRecord, node) -> list[tuple[int, str]]:
    found = node_logs(record.path, node)
    if node is not None and not found:
        raise KitError(f"--node {node}: no such node log in {record.path}")
    return found


def _lines(node: int, path: str, rank, tail):
    """A node log's lines (tagged as on the console when a rank is asked for), its last `tail` ones when given;
    read in bounded memory (a log may have grown to gigabytes)."""

    def shown(ln: str) -> str:
        ln = ln.replace(PROGRESS_MARK, "")
        return ln if rank is None or is_tagged(ln, node) else f"{node_tag(node)} {ln}"

    def keep(ln: str) -> bool:
        return rank is None or of_rank(shown(ln), rank)

    if tail:
        return [shown(ln) for ln in last_lines(path, tail, keep)]
    return (shown(ln) for ln in lines_of(path) if keep(ln))


def _print_whole(paths, rank=None, tail=None) -> None:
    shown = False
    for node, path in paths:
        lines = iter(_lines(node, path, rank, tail))
        first = next(lines, None)
        if rank is not None and first is None:
            continue  # rank R lives on one node
        shown = True
        sys.stdout.write(f"==> {os.path.basename(path)} <==\n")
        if first is not None:
            sys.stdout.write(first + "\n")
        for ln in lines:
            sys.stdout.write(ln + "\n")
    if rank is not None and not shown:  # said, not an empty answer that looks like a broken filter
        print(f"kit: rank {rank} has written nothing to its node's log (yet)", file=sys.stderr)


def _world(record: records.RunRecord) -> dict:
    """The plan's world (world_size, procs_per_node, ...), or {} when the plan cannot be read."""
    import json

    try:
        with open(record.file("plan.json"), encoding="utf-8") as f:
            world = json.load(f)["world"]
        return world if isinstance(world, dict) else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def fetch(record: records.RunRecord) -> None:
    """A backend whose node logs live elsewhere (SLURM through a login host) copies them into the record."""
    status = record.read_status()
    registry.backend(status.backend).fetch_logs(record, status)


def _follow(record: records.RunRecord, node, rank=None, tail=None) -> str:
    """Every node's lines as they come, tagged like the live console, until the run ends and the logs drain;
    with `tail`, starting from each log's last `tail` lines. The state it ended in."""
    offsets, pending = {}, {}
    if tail:
        for n, path in node_logs(record.path, node):
            size = os.path.getsize(path)
            cut = complete_end(path, size)  # a line still being written is printed whole when it ends
            with open(path, "rb") as f:
                f.seek(cut)
                offsets[path], pending[path] = size, f.read(size - cut)

            def tagged(ln: str, n: int = n) -> str:
                return ln if is_tagged(ln, n) else f"{node_tag(n)} {ln}"

            shown = last_lines(path, tail, lambda ln: of_rank(tagged(ln), rank), upto=cut)
            sys.stdout.write("".join(tagged(ln) + "\n" for ln in shown))
        sys.stdout.flush()
    while True:
        state = state_now(record)[0]
        fetch(record)
        print_new_lines(record.path, node, offsets, pending, only_rank=rank)
        if state not in NOT_OVER:
            return state
        time.sleep(FOLLOW_POLL)


def _refuse_sweep(args) -> None:
    """A sweep has no logs of its own: each trial is a run with its own."""
    from launcher.sweeps.record import find_sweep, is_sweep

    root = root_of(args.run_root, args.run_id)
    if args.run_id and is_sweep(root, args.run_id):
        trials = [t["run_id"] for t in find_sweep(root, args.run_id).read().get("trials", [])]
        shown = ", ".join(trials[:3]) + (", ..." if len(trials) > 3 else "")
        raise KitError(
            f"{args.run_id} is a sweep; its logs are its trials': kit logs <trial> ({shown}); "
            f"kit sweep status {args.run_id} lists them"
        )


def logs(args) -> int:
    """0, or with --follow the run's exit code once it has ended (as `kit wait` gives it)."""
    args.run_id = resolve_id(args.run_root, args.run_id)
    _refuse_sweep(args)
    rank, tail = getattr(args, "rank", None), getattr(args, "tail", None)
    if tail is not None and tail < 1:
        raise KitError(f"--tail {tail}: give a number of lines, 1 or more")
    if rank is not None and rank < 0:
        raise KitError(f"--rank {rank}: give a global rank, 0 or more")
    record = find_record(args.run_root, args.run_id)
    node = args.node
    world = _world(record)
    if rank is not None and world.get("world_size") is not None and rank >= world["world_size"]:
        raise KitError(f"--rank {rank}: run {os.path.basename(record.path)} has ranks 0 to {world['world_size'] - 1}")
    if rank is not None and world.get("procs_per_node") == 1:
        # One process per node: torchrun does not run, nothing is rank-tagged; rank R is node R's whole log.
        if node is not None and node != rank:
            raise KitError(f"--rank {rank} runs on node {rank} (one process per node), not --node {node}")
        node, rank = rank, None
    fetch(record)
    paths = _node_logs(record, node)  # a --node without a log is one line, before any following
    if getattr(args, "follow", False):
        state = _follow(record, node, rank, tail)
        return end_code(state, record.read_status()) or 0
    _print_whole(paths, rank, tail)
    return 0
