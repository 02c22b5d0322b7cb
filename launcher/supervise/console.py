"""kit's terminal: every node's output, tagged, with the launcher's noise held back, the tracebacks of ranks that
die after the first failure and repeated library warnings kept to the node logs (ranks_view.py), and progress
drawn live. kit's own lines during a run (console.note) are logged (launcher/logs.py), the progress bar cleared
first.

The node's log file is written by its watchdog, so nothing here can lose or stall a log: a closed terminal or
pipe (`kit submit ... | head`) only stops the copy to the terminal, while the node's output keeps being read.
"""

import logging
import os
import threading
import time
from typing import Optional

from launcher.insight.events import is_insight
from launcher.planning.tags import is_tagged, node_tag, split_progress
from launcher.supervise.noise import NoiseFilter, is_worker_line
from launcher.supervise.ranks_view import RanksView

log = logging.getLogger(__name__)
PROGRESS_INTERVAL_OFF_TTY = 30.0
TICK = 0.25  # how often a held traceback's time limit is checked while its rank is silent
_CLEAR = "\r\x1b[K"


class Console:
    """Thread-safe writer for the node streams (`out`, stdout) and kit's own notes (logged: stderr in the CLI)."""

    def __init__(self, out, tty=None, run_id: str = ""):
        self.out = out
        self.tty = _isatty(out) if tty is None else tty
        self._lock = threading.Lock()
        self._bar = False  # a progress line is drawn on the terminal's last row
        self._last_progress: dict[int, float] = {}  # node -> monotonic time of the last progress line printed off a tty
        self.alive = True
        self.rank_output_at = time.monotonic()  # when a rank last wrote anything (the hang watch reads it)
        self._view = RanksView(run_id)
        self._ticker: Optional[threading.Thread] = None

    def _write(self, stream, text: str) -> None:
        if not self.alive:
            return
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # EPIPE/EIO/closed: the reader went away; the run does not care
            self.alive = False

    def line(self, text: str) -> None:
        with self._lock:
            self._line(text)

    def _line(self, text: str) -> None:
        self._write(self.out, (_CLEAR if self._bar else "") + text + "\n")
        self._bar = False

    def node_line(self, text: str) -> None:
        """A node's output line (tagged), through the view of every rank's output (ranks_view.py)."""
        with self._lock:
            self._show(self._view.feed(text))

    def node_done(self, node: int) -> None:
        """The node's output ended: what the view still holds of it is shown or kept back now."""
        with self._lock:
            self._show(self._view.finish(node))

    def _show(self, lines: list) -> None:
        """Under the lock: the view's lines and notes, and a ticker while it holds a traceback back."""
        for text in lines:
            self._line(text)
        for text in self._view.take_notes():
            self._note(text)
        if self._view.holding and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True, name="kit-console-tick")
            self._ticker.start()

    def _tick(self) -> None:
        """Release what the view held past its limit, while the held rank is silent (nothing else would)."""
        while True:
            time.sleep(TICK)
            with self._lock:
                if not self._view.holding:
                    self._ticker = None
                    return
                self._show(self._view.expire())

    def progress(self, node: int, text: str) -> None:
        with self._lock:
            if self.tty:
                self._write(self.out, _CLEAR + text)
                self._bar = True
                return
            now = time.monotonic()
            if now - self._last_progress.get(node, -1e9) >= PROGRESS_INTERVAL_OFF_TTY:
                self._last_progress[node] = now
                self._write(self.out, text + "\n")

    def note(self, text: str, level: int = logging.INFO) -> None:
        """kit's own message, logged between the nodes' lines (never through a progress bar)."""
        with self._lock:
            self._note(text, level)

    def warn(self, text: str) -> None:
        """note() at WARNING: still shown with -q."""
        self.note(text, logging.WARNING)

    def _note(self, text: str, level: int = logging.INFO) -> None:
        if not self.alive:  # the terminal went away (hang_up, EPIPE): as for the nodes' lines
            return
        if self._bar:
            self._write(self.out, _CLEAR)
            self._bar = False
        log.log(level, text)

    def hang_up(self) -> None:
        """The terminal is gone (SIGHUP): stop writing to it, keep the run."""
        self.alive = False


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def follow_node(source, node: int, console: Console) -> threading.Thread:
    """Copy one node's output to the console, in a daemon thread, until EOF. `source` is a file descriptor (a
    local watchdog's stdout, closed at the end) or a callable `read(n) -> bytes` (b"" at EOF: an SSH channel)."""
    thread = threading.Thread(target=_copy, args=(source, node, console), daemon=True, name=f"node{node}-output")
    thread.start()
    return thread


def _copy(source, node: int, console: Console) -> None:
    read = source if callable(source) else (lambda n: os.read(source, n))
    noise = NoiseFilter()
    pending = b""
    while True:
        try:
            chunk = read(65536)
        except OSError:
            break
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            _show(raw.decode("utf-8", errors="replace"), node, console, noise)
    if pending:
        _show(pending.decode("utf-8", errors="replace"), node, console, noise)
    for line in noise.finish():
        console.node_line(line)
    console.node_done(node)
    if not callable(source):
        os.close(source)


def _show(line: str, node: int, console: Console, noise: NoiseFilter) -> None:
    # torchrun already tags worker lines as [nodeN/rankR]; tag the launcher's own lines [nodeN].
    if is_worker_line(line):
        console.rank_output_at = time.monotonic()
    if not is_tagged(line, node):
        line = f"{node_tag(node)} {line}"
    if is_insight(line):  # the training module's word to kit: in the node log, off the terminal
        return
    progress = split_progress(line)
    if progress is not None:
        console.progress(node, progress[0] + progress[1])
        return
    for shown in noise.feed(line):
        console.node_line(shown)
