"""The node watchdog's output part: the command's output copied to the node log and to the watchdog's stdout, a
closed stdout only stopping the copy there, progress lines logged at most once per PROGRESS_LOG_INTERVAL. Like the
watchdog, the standard library only: it is shipped to remote hosts with it."""

import os
import time

PROGRESS_LOG_INTERVAL = 30.0


def _tag_length(line: bytes) -> int:
    """The length of the line's leading `[nodeN] ` or `[nodeN/rankR] ` tag; 0 without one."""
    end = line.find(b"] ")
    if not line.startswith(b"[node") or end < 0:
        return 0
    node, slash, rank = line[5:end].partition(b"/rank")
    return end + 2 if node.isdigit() and (rank.isdigit() or not slash) else 0


PROGRESS_MARK = b"\x1b[1G"  # launcher.planning.tags.PROGRESS_MARK (this file imports nothing of kit's)


def split_progress(line: bytes):
    """(tag, text) if `line` is a progress line, else None."""
    tag = line[: _tag_length(line)]
    rest = line[len(tag) :]
    if rest.startswith((PROGRESS_MARK, b"\r")):
        return tag, rest.removeprefix(PROGRESS_MARK).lstrip(b"\r")
    return None


class Output:
    """Copy the command's output to the log and to our stdout; a closed stdout only stops the copy there."""

    def __init__(self, log_path):
        self.log_path, self.log, self.log_failed = log_path, None, False
        if log_path:
            try:
                self.log = open(log_path, "ab", buffering=0)
            except OSError as e:
                self._log_lost(e)
        self.stdout_ok = True
        self._last_progress_log = 0.0

    def _log_lost(self, e) -> None:
        """The log cannot be written (a full disk): say so once, on the stream kit follows, and keep draining
        the node's output (a pump that stopped would block the ranks in a pipe write)."""
        if not self.log_failed:
            self.log_failed = True
            self._to_stdout(
                f"kit: warning: node log {self.log_path}: {e.strerror or e}; its lines are dropped "
                f"while it cannot be written (the console still shows them)\n".encode()
            )

    def _to_stdout(self, data: bytes) -> None:
        if not self.stdout_ok:
            return
        try:
            os.write(1, data)
        except OSError:  # EPIPE: the supervisor or its terminal is gone; the node goes on
            self.stdout_ok = False

    def _to_log(self, line: bytes) -> None:
        if self.log is None:
            return
        progress = split_progress(line)
        if progress is not None:
            now = time.monotonic()
            if now - self._last_progress_log < PROGRESS_LOG_INTERVAL:
                return
            self._last_progress_log = now
            line = progress[0] + progress[1]
        try:
            self.log.write(line)
        except OSError as e:
            self._log_lost(e)

    def pump(self, fd: int) -> None:
        pending = b""
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._to_stdout(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._to_log(line + b"\n")
        if pending:
            self._to_log(pending)
        os.close(fd)
