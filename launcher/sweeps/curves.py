"""A trial's learning curve: the JSON lines `{"step": S, "<metric>": V}` its program appends to
`<output dir>/metrics.jsonl` (kit.report_metric writes them), read by the sweep driver as they come (through the
trial's backend: the local file, SFTP from node 0's host, the SLURM workdir), and kept in the trial's run record
(`curve.jsonl`) for the table and the plot."""

import json
import math
import os
from typing import Optional

from launcher.spec.sweep import CURVE_FILE, line_key

COPY = "curve.jsonl"  # the copy in the trial's run record
MAX_BYTES = 16 * 1024 * 1024


def point(line, metric: str) -> Optional[tuple[int, float]]:
    """(step, value) of one parsed line, or None when it has no integer step or no number for the metric (the
    full dotted path, or its last name)."""
    from launcher.sweeps.metrics import lookup

    if not isinstance(line, dict):
        return None
    step = line.get("step")
    if isinstance(step, bool) or not isinstance(step, (int, float)) or step != int(step):
        return None
    value = lookup(line, metric)
    if value is None:
        raw = line.get(line_key(metric))
        value = None if isinstance(raw, bool) or not isinstance(raw, (int, float)) else float(raw)
    if value is None or not math.isfinite(value):
        return None
    return int(step), value


class Curve:
    """The new lines of one running trial's metrics.jsonl, each time it is read. Lines already there when the
    trial started (an earlier attempt's) are skipped; a line not yet ended by a newline waits for the next read."""

    def __init__(self, backend, plan, base_dir: str, output_dir: str, metric: str, record):
        self.backend, self.plan, self.base_dir, self.metric, self.record = backend, plan, base_dir, metric, record
        self.path = os.path.join(output_dir, CURVE_FILE)
        self.offset = len(self._content() or b"")

    def _content(self) -> Optional[bytes]:
        try:
            return self.backend.read_output(self.plan, self.base_dir, self.path, MAX_BYTES)
        except Exception:  # an unreachable host now: read again next time; the run's own following says more
            return None

    def read(self) -> list[tuple[int, float]]:
        content = self._content()
        if content is None:
            return []
        if len(content) < self.offset:  # the file was started over
            self.offset = 0
        end = content.rfind(b"\n", self.offset) + 1
        if end <= self.offset:
            return []
        fresh, self.offset = content[self.offset : end], end
        points = []
        for raw in fresh.splitlines():
            try:
                found = point(json.loads(raw), self.metric)
            except ValueError:
                continue
            if found is not None:
                points.append(found)
        self._keep(points)
        return points

    def _keep(self, points) -> None:
        if not points or not os.path.isdir(self.record.path):
            return
        try:
            with open(os.path.join(self.record.path, COPY), "a", encoding="utf-8") as f:
                for step, value in points:
                    f.write(json.dumps({"step": step, "value": value}) + "\n")
        except OSError:
            pass


def kept(record_dir: str) -> list[tuple[int, float]]:
    """The curve kept in a trial's run record: (step, value) in the order they came."""
    out = []
    try:
        with open(os.path.join(record_dir, COPY), encoding="utf-8") as f:
            for raw in f:
                try:
                    line = json.loads(raw)
                    out.append((int(line["step"]), float(line["value"])))
                except (ValueError, KeyError, TypeError):
                    continue
    except OSError:
        pass
    return out
