"""Reading a node log in bounded memory, however large it has grown: its lines streamed from the start, or its last
N (of those a filter keeps) read backwards from the end in blocks."""

import os
from typing import Callable, Iterator, Optional

BLOCK = 1 << 16


def lines_of(path: str) -> Iterator[str]:
    """The file's lines (without their "\\n"; a last line not ended yet included), decoded leniently."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        pending = ""
        while chunk := f.read(BLOCK):
            pending += chunk
            *done, pending = pending.split("\n")
            yield from done
        if pending:
            yield pending


def last_lines(
    path: str, n: int, keep: Optional[Callable[[str], bool]] = None, upto: Optional[int] = None
) -> list[str]:
    """The last `n` lines of the file (of its first `upto` bytes) that `keep` keeps (every line without it),
    reading from the end: memory is a block and the lines found, not the file."""
    found: list[str] = []
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END) if upto is None else upto
        tail = b""  # the start of a line whose beginning lies in the block before
        first = True
        while end > 0 and len(found) < n:
            start = max(0, end - BLOCK)
            f.seek(start)
            block = f.read(end - start) + tail
            parts = block.split(b"\n")
            tail = parts.pop(0) if start > 0 else b""
            if first and parts and parts[-1] == b"":
                parts.pop()  # the file's final "\n" ends its last line
            first = False
            for raw in reversed(parts):
                line = raw.decode("utf-8", errors="replace")
                if keep is None or keep(line):
                    found.append(line)
                    if len(found) == n:
                        break
            end = start
        if len(found) < n and tail:
            line = tail.decode("utf-8", errors="replace")
            if keep is None or keep(line):
                found.append(line)
    return found[::-1]


def complete_end(path: str, size: int) -> int:
    """The offset just past the file's last complete line among its first `size` bytes (0 when there is none)."""
    with open(path, "rb") as f:
        end = size
        while end > 0:
            start = max(0, end - BLOCK)
            f.seek(start)
            block = f.read(end - start)
            at = block.rfind(b"\n")
            if at >= 0:
                return start + at + 1
            end = start
    return 0


__all__ = ["lines_of", "last_lines", "complete_end"]
