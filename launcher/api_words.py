"""The Python API's own words: its arguments checked at the boundary (a KitError naming the parameter as the
caller wrote it, before anything deeper sees a wrong type), and the one-line errors of the shared core, which
name the command line's flags, said with the API's keyword arguments instead."""

import os
import re
import shlex
from typing import Optional

from launcher.errors import KitError

_INTS = ("nodes", "gpus", "procs_per_node", "port")
_STRS = ("strategy", "mixed_precision")
# The flags of `kit submit` and the keyword arguments of kit.submit/plan/sweep that say the same.
_FLAG_WORDS = {"--nodes": "nodes", "--gpus": "gpus", "--procs-per-node": "procs_per_node", "--strategy": "strategy",
               "--mixed-precision": "mixed_precision", "--port": "port", "--run-id": "run_id",
               "--run-root": "run_root", "--cluster": "cluster", "--sweep": "sweep", "--set": "set"}
_FLAG = re.compile(r"--(?:nodes|gpus|procs-per-node|strategy|mixed-precision|port|run-id|run-root|cluster|sweep|set)"
                   r"\b(?: (?!to\b|and\b|or\b|with\b)(\S+?)(?=[:;,)]|\s|$))?")

# `kit submit JOB -- --lr 0.1` (a job's own argument given as a field): the words after -- are the API's args.
_JOB_ARGS = re.compile("(?<=give it )after --: " + re.escape("kit submit JOB -- ") + r"(.*)$", re.M)


def check_arguments(**given) -> None:
    """The arguments of kit.submit / plan / sweep, by type; one KitError naming the first that is wrong."""
    for name in _INTS:
        v = given.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise KitError(f"{name}={v!r}: give an int (e.g. {name}=2) or leave it out")
    for name in _STRS:
        v = given.get(name)
        if v is not None and not isinstance(v, str):
            raise KitError(f"{name}={v!r}: give a string (e.g. strategy='ddp', mixed_precision='bf16') or leave it "
                           f"out")
    run_id = given.get("run_id")
    if run_id is not None and (not isinstance(run_id, str) or not run_id):
        raise KitError(f"run_id={run_id!r}: give a non-empty string (letters, digits, '.', '_', '-') or leave it "
                       f"out for a generated one")
    args = given.get("args")
    if args is not None and (isinstance(args, (str, bytes)) or not all(isinstance(a, str) for a in args)):
        raise KitError(f"args={args!r}: a list of strings, e.g. args=['--epochs', '1']")
    for name in ("cluster", "sweep", "run_root"):
        v = given.get(name)
        if v is not None and not isinstance(v, (str, os.PathLike)):
            raise KitError(f"{name}={v!r}: a path (a string), or leave it out")


def in_api_words(error: KitError) -> KitError:
    """The same error, its command-line flags said as keyword arguments (`--nodes 2:` -> `nodes=2:`)."""
    def said(m: re.Match) -> str:
        word = _FLAG_WORDS[m.group(0).split(" ", 1)[0]]
        value: Optional[str] = m.group(1)
        if word == "set":
            return f"set[{value.split('=', 1)[0]!r}]={value.split('=', 1)[1]}" if value and "=" in value else "set"
        return f"{word}={value}" if value else word
    text = _JOB_ARGS.sub(lambda m: f"in args={shlex.split(m.group(1))!r}", _FLAG.sub(said, str(error)))
    out = KitError(text)
    out.exit_code = error.exit_code
    return out


def said_in_api_words(fn):
    """A public function of the API: the core's one-line errors said with its keyword arguments, not flags."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except KitError as e:
            raise in_api_words(e) from None
    return wrapper


__all__ = ["check_arguments", "in_api_words", "said_in_api_words"]
