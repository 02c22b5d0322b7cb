"""What a field of a record read back must be: checks that return the value (None stays None) or raise BadStatus,
since anyone who can write into a shared run root can write a record. Used by the run status (status.py) and by
each backend's handle (backends/handle.py)."""

import math
import re
from dataclasses import field
from typing import Optional

HOST_NAME = re.compile(r"^[A-Za-z0-9?][A-Za-z0-9_.:%-]*$")  # "?": a SLURM node not known yet; %: IPv6 zone
TICKS = re.compile(r"^\d+$")  # a process's start time in clock ticks (/proc)
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
ONE_LINE = re.compile(r"^[^\x00-\x1f\x7f]+$")  # a path or a word: one line, no control character


class BadStatus(ValueError):
    """A field of a record read back is not what kit writes there."""


def integer(v) -> Optional[int]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadStatus(f"expected an integer, got {v!r}")
    return v


def pid(v) -> Optional[int]:
    if v is None or v == "-":  # SLURM records say "-" where no pid is known
        return None
    v = integer(v)
    if v <= 0:
        raise BadStatus(f"expected a process id, got {v!r}")
    return v


def number(v) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise BadStatus(f"expected a number, got {v!r}")
    return float(v)


def text(v, pattern=None) -> Optional[str]:
    if v is None:
        return None
    if not isinstance(v, str):
        raise BadStatus(f"expected a string, got {v!r}")
    if pattern is not None and not pattern.fullmatch(v):
        raise BadStatus(f"{v!r} is not well-formed")
    return v


def mapping(v) -> Optional[dict]:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise BadStatus(f"expected a mapping, got {v!r}")
    return v


def items(v) -> Optional[list]:
    if v is None:
        return None
    if not isinstance(v, (list, tuple)):
        raise BadStatus(f"expected a list, got {v!r}")
    return list(v)


def checked(default, check):
    """A RunStatus field's default, with the function that checks a value read back or written."""
    return field(default=default, metadata={"check": check})
