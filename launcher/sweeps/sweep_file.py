"""sweep.json, typed: every field kit writes there checked when read back (as status.py checks status.json), since
anyone who can write into a shared run root can write one. A malformed file is one line naming the field."""

import math
import re
from typing import Any

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class BadSweep(ValueError):
    """A field of a sweep.json read back is not what kit writes there."""


def _int(v):
    if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
        raise BadSweep(f"expected an integer, got {v!r}")
    return v


def _num(v):
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
        raise BadSweep(f"expected a number, got {v!r}")
    return v


def _str(v):
    if v is not None and not isinstance(v, str):
        raise BadSweep(f"expected a string, got {v!r}")
    return v


def _dict(v):
    if v is not None and not isinstance(v, dict):
        raise BadSweep(f"expected a mapping, got {v!r}")
    return v


def _list_of(check):
    def inner(v):
        if v is None:
            return v
        if not isinstance(v, list):
            raise BadSweep(f"expected a list, got {v!r}")
        for i, item in enumerate(v):
            try:
                check(item)
            except BadSweep as e:
                raise BadSweep(f"[{i}]: {e}") from None
        return v

    return inner


def _run_id(v):
    if not isinstance(v, str) or not RUN_ID.fullmatch(v):
        raise BadSweep(f"{v!r} is not a run id")
    return v


def _trial(v):
    if not isinstance(v, dict):
        raise BadSweep(f"expected a trial mapping, got {v!r}")
    checks = {
        "index": _int,
        "run_id": _run_id,
        "params": _dict,
        "output_dir": _str,
        "lane": _int,
        "placement": _str,
        "asked": _int,
        "pruned_at": _int,
    }
    for name, check in checks.items():
        try:
            check(v.get(name))
        except BadSweep as e:
            raise BadSweep(f"{name}: {e}") from None
    if not isinstance(v.get("index"), int):
        raise BadSweep("index: missing")
    return v


FIELDS = {
    "sweep_id": _str,
    "job_name": _str,
    "backend": _str,
    "spec": _dict,
    "lanes": _int,
    "parameter_names": _list_of(_str),
    "trials": _list_of(_trial),
    "array": _dict,
    "created_at": _num,
    "state": _str,
    "driver_pid": _int,
    "driver_start": _num,
    "started_at": _num,
    "finished_at": _num,
    "exit_code": _int,
    "array_job_id": _str,
    "array_tasks": _list_of(_int),
    "submitted_at": _num,
    "errors": _dict,
    "workdir": _str,
    "login_host": _str,
    "login_ssh": _dict,
    "stopped": _str,
}


def checked(data: Any) -> dict:
    """`data` if every field kit knows is well-formed (others are left alone: a newer kit's); BadSweep names the
    first that is not."""
    if not isinstance(data, dict):
        raise BadSweep("not a JSON object")
    if "trials" not in data:
        raise BadSweep("trials: missing")
    for name, check in FIELDS.items():
        try:
            check(data.get(name))
        except BadSweep as e:
            raise BadSweep(f"{name}{e}" if str(e).startswith("[") else f"{name}: {e}") from None
    return data


__all__ = ["checked", "BadSweep"]
