"""Library warnings that every rank prints (a deprecation warning, DeepSpeed's accelerator note, a c10d note): the
console shows each once, the node logs keep every copy. Only warning-shaped lines count (Python's warnings, the
timestamped lines of DeepSpeed's logger, torch's C++ and glog-style logs); a rank's own lines are never merged."""

import re
from typing import Optional

LIMIT = 4096  # warnings remembered; past it, new ones are no longer merged (the console shows them)

_PY_WARNING = re.compile(r"^\S.*:\d+: [A-Za-z_]*Warning: ")  # path:line: FutureWarning: text (warnings module)
_STAMPED = (
    re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,.]+\] (\[[A-Z]+\] \[\S+\] .*)$"),  # DeepSpeed: [date time] [INFO] [f.py:1:fn]
    re.compile(r"^\[([IWEF])\d{4} [\d:.]+ (?:\d+ )?(\S+:\d+\] .*)$"),  # c10: [W1206 21:30:00.12 (pid) f.cpp:1]
    re.compile(r"^([IWEF])\d{4} [\d:.]+ +\d+ (\S+:\d+\] .*)$"),  # glog: W1206 21:30:00.12 pid f.py:1]
)
_RANK_WORDS = re.compile(r"\[[Rr]ank ?\d+\]|\b[Rr]ank[ =:]?\d+\b")


def warning_key(text: str) -> Optional[str]:
    """What a warning line says whoever printed it (its time, pid and rank taken out); None for other lines."""
    if _PY_WARNING.match(text):
        return _RANK_WORDS.sub("rank", text)
    for pattern in _STAMPED:
        m = pattern.match(text)
        if m:
            return _RANK_WORDS.sub("rank", " ".join(m.groups()))
    return None


def without_warnings(lines: list) -> list:
    """`lines` (a rank's own, tags off) less its warnings and the source line Python prints under each: what a
    rank said about its end is never a library's warning."""
    out, source_next = [], False
    for line in lines:
        if source_next and line[:1].isspace():
            source_next = False
            continue
        source_next = False
        if warning_key(line) is not None:
            source_next = bool(_PY_WARNING.match(line))
            continue
        out.append(line)
    return out


class Repeats:
    """show(stream, text): False for a warning already shown (from any rank) and for the source line Python prints
    under a warning it repeats. Not thread-safe: its owner serialises calls."""

    def __init__(self) -> None:
        self._seen: set = set()
        self._source_next: set = set()  # streams whose last line was a Python warning kept back

    def show(self, stream, text: str) -> bool:
        if stream in self._source_next:
            self._source_next.discard(stream)
            if text[:1].isspace() and text.strip():  # `  warnings.warn(...)`: the warned line's source
                return False
        key = warning_key(text)
        if key is None:
            return True
        if key in self._seen:
            if _PY_WARNING.match(text):
                self._source_next.add(stream)
            return False
        if len(self._seen) < LIMIT:
            self._seen.add(key)
        return True


__all__ = ["Repeats", "warning_key", "without_warnings"]
