"""A trial's metric: a dotted path into its metrics file (`test.accuracy`, `evals.-1.accuracy`: integers index
lists). When a trial ends, its metrics file is copied into its run record (from node 0's host over SFTP on SSH),
so `kit sweep status` works from the record alone, offline, after the outputs are gone."""

import json
import os
import posixpath
from typing import Optional

COPY = "metrics.json"          # the copy in the trial's run record
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


def _save(record_dir: str, content: bytes) -> None:
    tmp = os.path.join(record_dir, f"{COPY}.tmp.{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(content)
    os.replace(tmp, os.path.join(record_dir, COPY))


def keep_local(record_dir: str, base_dir: str, plan, output_dir: str, metrics_file: str) -> bool:
    path = os.path.join(base_dir, plan.nodes[0].workdir, output_dir, metrics_file)
    try:
        with open(path, "rb") as f:
            content = f.read(MAX_BYTES)
    except OSError:
        return False
    _save(record_dir, content)
    return True


def keep_remote(record_dir: str, backend, plan, output_dir: str, metrics_file: str) -> bool:
    """Fetch node 0's metrics file over SFTP (paths relative to the login's home, like the node's `cd`)."""
    from launcher.transport.endpoint import resolve
    from launcher.transport.ssh import connect
    node = plan.nodes[0]
    conn = connect(resolve(node.host, backend.addresses.get(node.host), backend.settings), backend.accepted)
    try:
        sftp = conn.client.open_sftp()
        with sftp.open(posixpath.join(node.workdir, output_dir, metrics_file), "rb") as f:
            content = f.read(MAX_BYTES)
    except IOError:
        return False
    finally:
        conn.close()
    _save(record_dir, content)
    return True
