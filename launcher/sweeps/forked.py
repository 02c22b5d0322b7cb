"""The two ends of a forked child (the detached sweep driver, a trial's supervisor): its output goes to a file,
and it never returns into the parent's code path."""

import os
import sys
from typing import NoReturn


def output_to(path: str, truncate: bool = False) -> None:
    """stdin from /dev/null; stdout and stderr to `path`."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else os.O_APPEND)
    console = os.open(path, flags, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    for fd, target in ((null, 0), (console, 1), (console, 2)):
        os.dup2(fd, target)


def leave(code: int) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
