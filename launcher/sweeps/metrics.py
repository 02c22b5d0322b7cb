"""A trial's metric: a dotted path into its metrics file (`test.accuracy`, `evals.-1.accuracy`: integers index
lists). When a trial ends, its metrics file is copied into its run record (read by its backend where the run wrote it),
so `kit sweep status` works from the record alone, offline, after the outputs are gone."""

import difflib
import json
import os
from typing import Optional

from launcher.errors import KitError

COPY = "metrics.json"  # the copy in the trial's run record
MAX_BYTES = 16 * 1024 * 1024


def lookup(data, path: str) -> Optional[float]:
    """The number at `path` in `data`, or None when the path leads nowhere or to something else."""
    cur = data
    for part in path.split("."):
        if isinstance(cur, list) and part.lstrip("-").isdigit():
            try:
                cur = cur[int(part)]
            except IndexError:
                return None
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return None
    if isinstance(cur, bool) or not isinstance(cur, (int, float)):
        return None
    return float(cur)


def number_keys(data, prefix: str = "") -> list[str]:
    """Every path in `data` that leads to a number, dotted as sweep.metric writes it (`final.loss`); a list is
    entered through its last item only (`evals.-1.accuracy`), as its length differs between trials."""
    if isinstance(data, bool):
        return []
    if isinstance(data, (int, float)):
        return [prefix] if prefix else []
    if isinstance(data, dict):
        return [
            k
            for name, v in data.items()
            if isinstance(name, str)
            for k in number_keys(v, f"{prefix}.{name}" if prefix else name)
        ]
    if isinstance(data, list) and data:
        return number_keys(data[-1], f"{prefix}.-1" if prefix else "-1")
    return []


def _close(metric: str, keys: list[str]) -> Optional[str]:
    """The one key the user most likely meant: the only key that ends in `metric` (`loss` -> `final.loss`), else
    the nearest spelling."""
    tails = [k for k in keys if k.endswith("." + metric)]
    if len(tails) == 1:
        return tails[0]
    close = difflib.get_close_matches(metric, keys, n=1, cutoff=0.75)
    return close[0] if close else None


MISSING = "is missing or not JSON"  # a metrics file not found (yet): conclusive only when it happens again
UNREAD_TRIALS = 2  # succeeded trials without a readable metrics file before a sweep stops


def metric_problem(data, metric: str, where: str) -> Optional[str]:
    """None when `metric` leads to a number in `data` (a trial's metrics file, read as JSON; None: none was
    found), else one line naming the keys that do exist (where: which file of which trial, for the line)."""
    if data is not None and lookup(data, metric) is not None:
        return None
    if data is None:
        return (
            f"{where} {MISSING}, so no trial can be scored by sweep.metric {metric}; the program "
            f"must write it (sweep.metrics_file) into the directory its sweep.output_arg names"
        )
    keys = number_keys(data)
    if not keys:
        return f"sweep.metric {metric} names no number in {where}, which holds none at all"
    shown = ", ".join(keys[:20]) + (f" (and {len(keys) - 20} more)" if len(keys) > 20 else "")
    close = _close(metric, keys)
    hint = f" (did you mean {close}?)" if close else ""
    return f"sweep.metric {metric} names no number in {where}, which has {shown}{hint}"


def read_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def trial_metrics(record_dir: str, workdir: Optional[str], output_dir: str, metrics_file: str):
    """The trial's metrics: the record's copy, else the file in the workdir (local and SLURM runs)."""
    data = read_json(os.path.join(record_dir, COPY))
    if data is None and workdir:
        data = read_json(os.path.join(workdir, output_dir, metrics_file))
    return data


def fetch(record_dir: str, status, output_dir: str, metrics_file: str):
    """The trial's metrics read by its backend from where its run wrote them (Backend.fetch_output), kept in its
    record from then on; None when the backend cannot reach it."""
    from launcher.backends import registry

    try:
        from launcher.records import RunRecord

        content = registry.backend(status.backend).fetch_output(
            RunRecord(record_dir), status, os.path.join(output_dir, metrics_file), MAX_BYTES
        )
    except (KitError, OSError):  # an unreachable login host: no metric in the table, which still shows
        return None
    if content is None:
        return None
    save(record_dir, content)
    try:
        return json.loads(content)
    except ValueError:
        return None


def save(record_dir: str, content: bytes) -> None:
    """The trial's metrics file, copied into its record (the backend read it where the run wrote it)."""
    tmp = os.path.join(record_dir, f"{COPY}.tmp.{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(content)
    os.replace(tmp, os.path.join(record_dir, COPY))
