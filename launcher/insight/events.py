"""The training module's marked lines (train/insight.py) as kit reads them: kept off the console and out of a
failure's last words, and read back from a record's node logs for the goodput report and the straggler watch."""

import json
import os
import re
from typing import Optional

MARK = "kit-insight: "  # train/insight.py spells the same (the training module does not import kit)
_TAG = re.compile(r"^\[node(\d+)(?:/rank(\d+))?\] ")


def is_insight(line: str) -> bool:
    """A marked line, tagged by its node or not."""
    m = _TAG.match(line)
    return line.startswith(MARK, m.end() if m else 0)


def parse(line: str, node: Optional[int] = None) -> Optional[dict]:
    """The event a line holds, with its node (from the tag, else `node`), or None."""
    m = _TAG.match(line)
    start = m.end() if m else 0
    if not line.startswith(MARK, start):
        return None
    try:
        event = json.loads(line[start + len(MARK) :])
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("e"), str) or not _number(event.get("t")):
        return None
    if any(k in event and not _number(event[k]) for k in _NUMBERS):  # a torn or forged line: not an event
        return None
    event["node"] = int(m.group(1)) if m else node
    return event


_NUMBERS = ("t0", "t1", "at", "step", "r", "a", "sr")  # what the report does arithmetic with, sorts or assigns by


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_MARK_BYTES = MARK.encode()
CHUNK = 1 << 20


def read_log_events(path: str, offset: int = 0, node: Optional[int] = None) -> tuple[list, int]:
    """(events, the offset after the last complete line) of a node log from `offset`: only marked lines are
    decoded, so a log of gigabytes costs a scan, not a parse."""
    events = []
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            rest = b""
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                data = rest + chunk
                cut = data.rfind(b"\n") + 1
                rest, data = data[cut:], data[:cut]
                offset += cut
                at = data.find(_MARK_BYTES)
                while at != -1:
                    start = data.rfind(b"\n", 0, at) + 1
                    end = data.find(b"\n", at)
                    event = parse(data[start:end].decode("utf-8", errors="replace"), node)
                    if event is not None:
                        events.append(event)
                    at = data.find(_MARK_BYTES, end)
    except OSError:
        pass
    return events, offset


def record_events(record_path: str) -> list:
    """Every event in a record's node logs (node<N>.log), in time order."""
    events = []
    try:
        names = os.listdir(record_path)
    except OSError:
        return []
    for name in names:
        if name.startswith("node") and name.endswith(".log") and name[4:-4].isdigit():
            events += read_log_events(os.path.join(record_path, name), node=int(name[4:-4]))[0]
    return sorted(events, key=lambda e: e["t"])


__all__ = ["MARK", "is_insight", "parse", "read_log_events", "record_events"]
