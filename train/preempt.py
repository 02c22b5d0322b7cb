"""Preemption: SIGTERM and SIGUSR1, honoured in every phase of a run.

* In the training loop (``deferred``) a signal only sets a flag.  Signals reach ranks at different moments (or
  only some ranks) and saving a checkpoint is collective, so the flag is max-reduced across ranks once per
  optimizer step and every rank stops at the same step, after saving.
* Everywhere else (data loading, prepare, resume, the final test) SIGTERM raises ``Preempted`` at once: there is
  nothing to save that the last checkpoint does not hold, and a launcher tearing the job down must not have to
  escalate to SIGKILL.  SIGUSR1 (SLURM's "time is nearly up") is only noted there: the run may still finish.
* A write that must not be cut in half (the final model) runs ``critical``: it completes, then a SIGTERM that
  arrived meanwhile raises ``Preempted``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import torch

MARKER = "PREEMPTED"
# Test hooks: rank 0 sends itself SIGTERM when this optimizer step is reached (a deterministic "preemption");
# every rank pauses (interruptibly) on entering the named final phase ("test" or "save"), as a long phase would.
_TEST_ENV = "KIT_TRAIN_TEST_SIGNAL_AT_STEP"
HOLD_ENV = "KIT_TRAIN_TEST_HOLD_PHASE"
_HOLD_SECONDS = 120.0


class Preempted(BaseException):
    """SIGTERM outside the training loop.  A BaseException, so that no library's `except Exception` eats it."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


class Preemption:
    def __init__(self):
        self.requested = False  # any stop signal seen (acted on in the training loop)
        self.terminate = False  # SIGTERM seen (acted on in every phase)
        self.signal_name: str | None = None
        self._deferred = False
        self._test_step = int(os.environ.get(_TEST_ENV, "0") or 0)

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            signal.signal(sig, self._handler)

    def _handler(self, signum, frame) -> None:
        self.requested = True
        self.signal_name = signal.Signals(signum).name
        if signum == signal.SIGTERM:
            # Raised once only. A teardown often sends more than one (kit's watchdog signals every process of
            # the node, and torchrun's agent forwards its own SIGTERM to its workers): a second one must not
            # cut short the rank's reaction to the first (writing the PREEMPTED marker).
            first, self.terminate = not self.terminate, True
            if first and not self._deferred:
                raise Preempted(self.signal_name)

    @contextlib.contextmanager
    def deferred(self):
        """Signals only set flags inside; the caller acts on them at a safe point."""
        old, self._deferred = self._deferred, True
        try:
            yield
        finally:
            self._deferred = old

    @contextlib.contextmanager
    def critical(self):
        """Finish the enclosed work, then honour a SIGTERM that arrived meanwhile."""
        with self.deferred():
            yield
        self.raise_if_terminated()

    def raise_if_terminated(self) -> None:
        if self.terminate and not self._deferred:
            raise Preempted(self.signal_name or "SIGTERM")

    def should_stop(self, accelerator, step: int) -> bool:
        """Collective when world > 1: call on every rank at every optimizer step."""
        world = accelerator.num_processes
        device = accelerator.device if world > 1 else None  # a world of one needs no tensor
        return self.agree(
            step, accelerator.process_index == 0, world, device, lambda flag: accelerator.reduce(flag, reduction="sum")
        )

    def agree(self, step: int, first_rank: bool, world: int, device, reduce_sum) -> bool:
        """Whether any rank saw a stop signal (`reduce_sum`: a sum over the world; collective when world > 1)."""
        if self._test_step and step == self._test_step and first_rank:
            os.kill(os.getpid(), signal.SIGTERM)
        if world == 1:
            return self.requested
        flag = torch.tensor([1.0 if self.requested else 0.0], device=device)
        return bool(reduce_sum(flag).item() > 0)


def enter_phase(accelerator, name: str, detail: str, preemption: Preemption | None = None) -> None:
    """Announce a final phase (one line, main process); the test hook may hold every rank here, as a long phase
    would (in a critical section a SIGTERM ends the hold: the rest of the work is what "nearly done" means)."""
    if accelerator.is_main_process:
        print(f"{name}: {detail}", flush=True)
    if os.environ.get(HOLD_ENV) == name:
        deadline = time.monotonic() + _HOLD_SECONDS
        while time.monotonic() < deadline and not (preemption and preemption.terminate):
            time.sleep(0.05)  # Python-level sleep: a signal handler runs within 50 ms


def write_marker(output_dir: Path, step: int, checkpoint: Path | None, signal_name: str | None) -> None:
    data = {
        "step": step,
        "checkpoint": None if checkpoint is None else str(checkpoint),
        "signal": signal_name,
        "run_id": os.environ.get("KIT_RUN_ID"),
    }
    tmp = Path(output_dir) / (MARKER + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, Path(output_dir) / MARKER)


def clear_marker(output_dir: Path) -> None:
    try:
        (Path(output_dir) / MARKER).unlink()
    except FileNotFoundError:
        pass


def stopped_outside_loop(output_dir, step: int, last: Path | None, signal_name: str, main: bool, code: int) -> int:
    """SIGTERM outside the training loop: no new checkpoint; the main process points the launcher at the last one.
    Returns `code` (the preemption exit code)."""
    if main:
        try:
            write_marker(Path(output_dir), step, last, signal_name)
        except OSError:
            pass  # the output directory may not exist yet
        print(
            f"preempted by {signal_name} outside the training loop at step {step} (last checkpoint: {last}), "
            f"exit {code}",
            file=sys.stderr,
            flush=True,
        )
    return code
