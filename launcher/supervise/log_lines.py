"""A record's node logs read as they grow: the complete lines written since the last read, tagged like the live
console (`kit logs --follow`, the SLURM backend's following)."""

import logging
import os
import sys

from launcher.insight.events import is_insight
from launcher.planning.tags import PROGRESS_MARK, is_tagged, node_tag
from launcher.supervise.noise import NoiseFilter, is_worker_line

log = logging.getLogger(__name__)


def node_logs(record_path: str, node=None) -> list[tuple[int, str]]:
    """(rank, path) of the record's node<N>.log files, in rank order; only `node`'s when given."""
    names = sorted(
        (int(n[4:-4]), n)
        for n in os.listdir(record_path)
        if n.startswith("node") and n.endswith(".log") and n[4:-4].isdigit()
    )
    if node is not None:
        names = [(r, n) for r, n in names if r == node]
    return [(r, os.path.join(record_path, n)) for r, n in names]


def of_rank(line: str, rank) -> bool:
    """Is `line` (tagged) one of global rank `rank`'s (every line when rank is None)?"""
    return rank is None or (line.startswith("[node") and f"/rank{rank}] " in line.split("] ", 1)[0] + "] ")


def print_new_lines(
    record_path: str, node, offsets: dict, pending: dict, noise=None, out=None, only_rank=None, view=None
) -> int:
    """The node logs' complete lines written since the last call, tagged like the live console. With `noise`
    (a dict, one NoiseFilter per log kept in it), the launcher's tracebacks, tables and log lines stay in the
    logs, as on the local backend's console; without it every line is shown (`kit logs`). With `view` (a
    RanksView), the tracebacks of ranks failing after the first and repeated library warnings stay there too, as
    on the console. Returns how many of the new lines are the ranks' own (the hang watch counts them as
    progress). With `only_rank`, only that global rank's lines are shown."""
    out = out or sys.stdout
    ranks = 0
    for rank, path in node_logs(record_path, node) if os.path.isdir(record_path) else []:
        with open(path, "rb") as f:
            f.seek(offsets.get(path, 0))
            data = pending.get(path, b"") + f.read()
            offsets[path] = f.tell()
        *lines, pending[path] = data.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", errors="replace")
            ranks += is_worker_line(line)
            line = line if is_tagged(line, rank) else f"{node_tag(rank)} {line}"
            line = line.replace(PROGRESS_MARK, "", 1)  # a redraw is a line like any other here
            if not of_rank(line, only_rank) or is_insight(line):  # the training module's word to kit
                continue
            shown = [line] if noise is None else noise.setdefault(path, NoiseFilter()).feed(line)
            if view is not None:
                shown = [kept for ln in shown for kept in view.feed(ln)]
            out.write("".join(ln + "\n" for ln in shown))
        out.flush()
    if view is not None:
        _shown(view, view.expire(), out)
    return ranks


def _shown(view, lines: list, out) -> None:
    """Lines a RanksView let through, then kit's notes about what it kept back (logged)."""
    out.write("".join(ln + "\n" for ln in lines))
    out.flush()
    for note in view.take_notes():
        log.info(note)


def flush_held(noise: dict, out=None, view=None) -> None:
    """What the noise filters (and the RanksView) still hold at the end of a run (a traceback that was the job's
    own)."""
    out = out or sys.stdout
    for held in noise.values():
        lines = held.finish()
        out.write(
            "".join(ln + "\n" for ln in (lines if view is None else [kept for ln in lines for kept in view.feed(ln)]))
        )
    if view is not None:
        _shown(view, view.finish(), out)
    out.flush()
