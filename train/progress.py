"""The main process's tqdm bar, readable in a terminal and in launcher logs alike.

Under `accelerate launch` (and so under kit) stderr is a pipe, not a terminal: tqdm's carriage-return redraws
turn into one garbled log line per refresh, glued to the next message.  Off a terminal the bar therefore
writes whole lines, at most every `LOG_INTERVAL_S` seconds.  Under kit (`KIT_PROGRESS=redraw`) it writes a
whole line per redraw, every `REDRAW_INTERVAL_S`, starting with kit's mark: kit draws those in place
when its own output is a terminal and keeps one per 30 s in logs.
"""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm

LOG_INTERVAL_S = 30.0
REDRAW_INTERVAL_S = 0.5
# kit's mark of a redraw line (launcher.planning.tags.PROGRESS_MARK; this module does not import kit): ANSI
# "cursor to column 1", which torchrun's tee keeps (a "\r" would end the line there).
KIT_PROGRESS_MARK = "\x1b[1G"


class LineWriter:
    """A file for tqdm that turns each redraw into one plain line and drops tqdm's line clearing."""

    def __init__(self, stream, prefix: str = ""):
        self.stream = stream
        self.prefix = prefix  # KIT_PROGRESS_MARK marks a redraw for kit's console
        self._last = None

    def write(self, text: str) -> int:
        for piece in text.replace("\r", "\n").split("\n"):
            piece = piece.rstrip()
            if piece and piece != self._last:
                self.stream.write(self.prefix + piece + "\n")
                self._last = piece
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def _is_terminal(stream) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


def progress_bar(total: int, initial: int, disable: bool, desc: str = "train", stream=None):
    stream = stream or sys.stderr
    if _is_terminal(stream):
        return tqdm(total=total, initial=initial, desc=desc, dynamic_ncols=True, disable=disable, file=stream)
    if os.environ.get("KIT_PROGRESS") == "redraw":
        return tqdm(
            total=total,
            initial=initial,
            desc=desc,
            ncols=100,
            disable=disable,
            file=LineWriter(stream, prefix=KIT_PROGRESS_MARK),
            mininterval=REDRAW_INTERVAL_S,
        )
    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        ncols=100,
        disable=disable,
        file=LineWriter(stream),
        mininterval=LOG_INTERVAL_S,
        maxinterval=LOG_INTERVAL_S,
    )


def quiet_library_bars(stream=None) -> None:
    """Off a terminal, drop transformers' own bars (e.g. "Writing model shards"): they only add log noise."""
    if not _is_terminal(stream or sys.stderr):
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
