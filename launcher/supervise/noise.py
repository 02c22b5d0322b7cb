"""Which node output lines are the launcher's noise: kept in the logs, kept off the terminal.

When a rank fails, torchrun's agent prints its own traceback and a ChildFailedError table (about 40 lines per
node), and its glog-style warnings ("Sending process N closing signal SIGTERM"). The rank's own lines carry
torchrun's `[nodeN/rankR]` tag and are never noise; kit prints one summary line of the failure instead.
"""

import re

_TAG = re.compile(r"^\[node\d+(?:/rank\d+)?\] ")
_WORKER_TAG = re.compile(r"^\[node\d+/rank\d+\] ")
# glog-style lines from torch.distributed (elastic agent, rendezvous): "W1203 12:17:08.089000 5910 torch/...".
_TORCH_LOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S*torch/distributed/")
# The agent's C++ c10d store logs: "[W1203 16:44:59.899074247 socket.cpp:207] [c10d] The hostname of ...".
_C10D_LOG = re.compile(r"^\[[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ [^\]]*\] \[c10d\]")
# C++ stack traces that torch prints with a c10 error (a TCPStore that cannot reach the master: every ~30 s).
_CPP_TRACE = re.compile(
    r"^(frame #\d+: |Exception raised from \S.* \(most recent call first\):$|"
    r"<omitting python frames>$)"
)
_TABLE = re.compile(
    r"^(=+|-+|Failures:|Root Cause \(first observed failure\):|\[\d+\]:|\s*<NO_OTHER_FAILURES>|"
    r"\s+(time|host|rank|exitcode|error_file|traceback)\s*:)"
)


# Libraries' notes that every CPU run prints and no user acts on, kept in the logs, off the terminal: DeepSpeed's
# accelerator detection (at the end of every DDP job, from accelerate's import of it), c10d's reverse lookup of a
# peer without a DNS name, accelerate's 3-line note about defaults it filled in.
# (A GPU job whose DeepSpeed fell back to CPU is not hidden by this: its world check fails on the device.)
_LIBRARY_NOTES = re.compile(
    r"^(\[\d{4}-\d\d-\d\d [\d:,]+\] \[(INFO|WARNING)\] \[real_accelerator\.py:\d+:get_accelerator\] Setting "
    r"(ds_)?accelerator to|\[[IW]\d{4} [^\]]*\] \[c10d\] The hostname of the client socket cannot be retrieved)"
)
# accelerate's launcher (its own lines: untagged, or [nodeN]), never a rank's.
_LAUNCHER_NOTES = re.compile(
    r"^(The following values were not passed to `accelerate launch` and had defaults used instead:|"
    r"\s*`--[a-z_]+` was set to (a value of )?`[^`]*`|To avoid this warning pass in values for each of the "
    r"problematic parameters or run `accelerate config`\.)"
)


def is_library_note(text: str, launcher_line: bool = True) -> bool:
    """A line (its tag stripped) that a library prints on every run: off the terminal, kept in the log.
    `launcher_line`: the line is the launcher's own (not a rank's), where accelerate's notes come from."""
    return bool(_LIBRARY_NOTES.match(text) or (launcher_line and _LAUNCHER_NOTES.match(text)))


def strip_tag(line: str) -> str:
    return _TAG.sub("", line, count=1)


def is_worker_line(line: str) -> bool:
    return bool(_WORKER_TAG.match(line))


# Python's words between two chained tracebacks: the launcher's wraps the rank's (one process: accelerate's simple
# launcher re-raises the child's failure), so they are never what went wrong.
_CHAINED = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)


def is_launcher_noise(text: str) -> bool:
    """One untagged launcher line, judged alone."""
    return bool(
        _TORCH_LOG.match(text)
        or _C10D_LOG.match(text)
        or _TABLE.match(text)
        or _CPP_TRACE.match(text)
        or "ChildFailedError" in text
        or "CalledProcessError" in text
        or text in _CHAINED
    )


_LAUNCHER_FRAMES = ("accelerate/commands/launch.py", "torch/distributed/run.py", "torch/distributed/launcher/")


def is_launcher_traceback(lines: list[str]) -> bool:
    return any(frame in line for line in lines for frame in _LAUNCHER_FRAMES)


class NoiseFilter:
    """Per node, streaming: `feed(line)` returns the lines to show now, `finish()` what is left at the end.

    An untagged traceback is held until it ends: the launcher's own (frames in accelerate's launch or
    torch.distributed) is dropped, and the rest of the launcher's output after it is its death rattle; any other
    traceback (a single-process job's own, which torchrun does not tag) is shown whole."""

    def __init__(self) -> None:
        self._dying = False
        self._held: list[str] = []
        self._after_noise = False  # the blank line that ends a C++ trace is the trace's too

    def feed(self, line: str) -> list[str]:
        text = strip_tag(line)
        if is_library_note(text, launcher_line=not is_worker_line(line)):
            return []
        if is_worker_line(line):
            return [line]
        if self._held:
            self._held.append(line)
            if text.startswith((" ", "\t", "During handling", "The above")) or not text.strip():
                return []
            held, self._held = self._held, []
            if is_launcher_traceback(held):
                self._dying = True
                return []
            return held
        if text.startswith("Traceback (most recent call last):"):
            self._held = [line]
            return []
        noise = is_launcher_noise(text)
        blank_after_noise = self._after_noise and not text.strip()
        self._after_noise = noise
        return [] if self._dying or noise or blank_after_noise else [line]

    def finish(self) -> list[str]:
        held, self._held = self._held, []
        return [] if is_launcher_traceback(held) else held
