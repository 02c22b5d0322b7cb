"""`kit submit`'s first half (core/prepare.py: load and validate the specs, plan, local checks) in a forked process,
while kit itself logs in to an SSH cluster's hosts (backends/ssh/early.py).

Why a process: the first half is ~0.1 s of CPU, most of it pydantic building kit's schemas, and the logins are
paramiko, Python too. In one process they take turns on one interpreter lock, and kit reaches its hosts only
after both; in two, they run side by side, and kit never imports the schemas at all (the planner sends plain
data back, pickled).

The fork comes before any thread exists (the logins' come after), so the child inherits no lock held by one.
The child ignores Ctrl-C: kit, which gets it too, kills the child (`close()`), which has started and written
nothing. A child whose parent is gone ends at its first write to the pipe."""

import os
import signal
import sys

from launcher.errors import KitError


class PlannerFailed(RuntimeError):
    """The planner crashed (a bug, not a user's mistake): its traceback is the message."""


class Planner:
    def __init__(self, request):
        sys.stdout.flush()
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        self._owner = os.getpid()  # a forked copy of kit (a detached supervisor) never touches the child
        self.pid = os.fork()
        if self.pid == 0:
            os.close(read_end)
            _child(request, write_end)  # never returns
        os.close(write_end)
        self._pipe = read_end

    def result(self):
        """The child's Prepared (or None for a sweep); its KitError raised here, as if raised in this process."""
        import pickle

        try:
            size = int.from_bytes(self._read(8) or bytes(8), "big")
            data = self._read(size) if size else b""
        except KeyboardInterrupt:
            raise KitError("interrupted while planning; nothing was started") from None
        if not size or len(data) < size:
            raise PlannerFailed(f"the planner process ended without an answer ({_describe(self._reap())})")
        kind, value = pickle.loads(data)
        self._reap(wait=False)  # it has ended, or nearly: close() reaps it then
        if kind == "error":
            raise value
        if kind == "crash":
            raise PlannerFailed(value)
        return value

    def _read(self, size: int) -> bytes:
        """Up to `size` bytes from the child: fewer only if it ended first."""
        chunks, left = [], size
        while left and (chunk := os.read(self._pipe, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """Kill the child if it still runs (kit was interrupted or failed first, or it has not quite ended
        after its answer); reap it either way."""
        if os.getpid() != self._owner:
            return
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None

    def _reap(self, wait: bool = True) -> int:
        """The child's wait status, once it has ended (0 if it was reaped before, or is not yet and not `wait`)."""
        if not self.pid:
            return 0
        while True:
            try:
                pid, status = os.waitpid(self.pid, 0 if wait else os.WNOHANG)
            except InterruptedError:
                continue
            except ChildProcessError:
                pid, status = self.pid, 0
            if pid:
                self.pid = 0
            return status


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _load_schemas() -> None:
    """kit's schemas, without pydantic's plugin search (a scan of every installed package's entry points, and
    the import of importlib.metadata for it: ~15 ms): plugins observe validation, kit's checks need none. The
    switch is pydantic's variable; set in this process only, which starts no program."""
    from launcher.metadata_on_use import metadata_on_use

    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    with metadata_on_use():
        import launcher.spec  # noqa: F401


def _plain(error: KitError) -> KitError:
    """An error that would not pickle (a field that will not) as its line, of the same exit code."""
    plain = KitError(str(error))
    plain.exit_code = error.exit_code
    return plain


def _child(request, pipe: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answer: tuple[str, object]  # ("ok", the Prepared), ("error", the KitError) or ("crash", the message)
    try:
        _load_schemas()
        from launcher.core.prepare import prepared_for

        answer = ("ok", prepared_for(request))
    except KitError as e:  # the error itself: its class (exit code) and fields
        answer = ("error", e)
    except BaseException:
        import traceback

        answer = ("crash", "the planner process failed:\n" + traceback.format_exc())
    try:
        import pickle

        try:
            data = pickle.dumps(answer)
        except Exception:
            import traceback

            data = pickle.dumps(
                ("error", _plain(answer[1]))
                if isinstance(answer[1], KitError)
                else ("crash", "the planner's answer could not be sent:\n" + traceback.format_exc())
            )
        data = len(data).to_bytes(8, "big") + data  # kit reads this much, not waiting for this process's end
        while data:
            data = data[os.write(pipe, data) :]
    finally:
        os._exit(0)  # never back into kit's CLI, its exit handlers or buffered output
