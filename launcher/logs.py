"""kit's own lines (what it does next, warnings, errors) are records of the `launcher` logger: each module speaks
through `logging.getLogger(__name__)`, and a process that talks to a person installs one console handler.

    setup_console(level)   the CLI (INFO; -v DEBUG; -q WARNING), and every kit process that is not the CLI but
                           writes a console of its own (a detached run's supervisor, a sweep's driver and trials)

The handler writes each message as is (`kit: ...`, byte for byte what kit printed before it logged), one line a
record, on stderr as it is at that moment (a forked child's console file, a test's capture), flushed at once so
that kit's lines keep their place among the ranks' output. The Python API installs nothing: a program that
imports kit sees kit's warnings through Python's last-resort handler and the rest when it configures logging."""

import logging
import sys

ROOT = "launcher"


class _Stderr(logging.StreamHandler):
    """The message alone, on whatever sys.stderr is when the record comes (not the one at setup), flushed per
    record. A stderr that went away (a closed terminal, EPIPE) loses the line, never the run."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass

    def handleError(self, record) -> None:
        if not isinstance(sys.exc_info()[1], (OSError, ValueError)):
            super().handleError(record)


def setup_console(level: int = logging.INFO) -> None:
    """Kit's lines at `level` and above on stderr, the message as is; called again, it replaces its handler (the
    CLI's main() run twice in one process, a forked child that writes a console file of its own)."""
    logger = logging.getLogger(ROOT)
    for handler in [h for h in logger.handlers if isinstance(h, _Stderr)]:
        logger.removeHandler(handler)
    logger.addHandler(_Stderr())
    logger.setLevel(level)


def child_level() -> int:
    """The level of a kit process that writes a console file for this one (a detached supervisor, a trial): every
    line kit says (INFO), and the debug lines too when this process shows them. A file is read later: -q does not
    thin it."""
    return logging.DEBUG if logging.getLogger(ROOT).isEnabledFor(logging.DEBUG) else logging.INFO


__all__ = ["ROOT", "setup_console", "child_level"]
