"""Preemption: SIGTERM/SIGUSR1 set a flag; all ranks agree on it at an optimizer-step boundary.

Signals reach ranks at different moments (or only some ranks), and saving a checkpoint is collective, so the
flag is max-reduced across ranks once per optimizer step and every rank stops at the same step.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import torch

MARKER = "PREEMPTED"
# Test hook: rank 0 sends itself SIGTERM when this optimizer step is reached (a deterministic "preemption").
_TEST_ENV = "KIT_TRAIN_TEST_SIGNAL_AT_STEP"


class Preemption:
    def __init__(self):
        self.requested = False
        self.signal_name: str | None = None
        self._test_step = int(os.environ.get(_TEST_ENV, "0") or 0)

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            signal.signal(sig, self._handler)

    def _handler(self, signum, frame) -> None:
        self.requested = True
        self.signal_name = signal.Signals(signum).name

    def should_stop(self, accelerator, step: int) -> bool:
        """Collective when world > 1: call on every rank at every optimizer step."""
        if self._test_step and step == self._test_step and accelerator.process_index == 0:
            os.kill(os.getpid(), signal.SIGTERM)
        if accelerator.num_processes == 1:
            return self.requested
        flag = torch.tensor([1.0 if self.requested else 0.0], device=accelerator.device)
        return bool(accelerator.reduce(flag, reduction="sum").item() > 0)


def write_marker(output_dir: Path, step: int, checkpoint: Path, signal_name: str | None) -> None:
    data = {"step": step, "checkpoint": str(checkpoint), "signal": signal_name,
            "run_id": os.environ.get("KIT_RUN_ID")}
    tmp = Path(output_dir) / (MARKER + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, Path(output_dir) / MARKER)


def clear_marker(output_dir: Path) -> None:
    try:
        (Path(output_dir) / MARKER).unlink()
    except FileNotFoundError:
        pass
