"""What the training module tells kit as it trains (kit's goodput report and straggler watch read it): one marked
JSON line per event on stdout, which kit's console keeps off the terminal and the node logs keep.

* The main process's timeline: process start, imports done, world formed, checkpoint restores and saves,
  evaluations, the training loop's start, its first step, progress every PROGRESS_EVERY_S, its end. A loop's
  events name its phase (`pretrain` before fine-tuning, `train`); every event names its attempt (attempt_fields).
* Every rank's sections that hold no collective, timed per optimizer step and reported every REPORT_EVERY_S
  (`KIT_INSIGHT_EVERY`): data loading (the loader's next batch; an epoch's first batch, whose iterator syncs the
  ranks' RNG, is left out) and forward (the model's own forward, inside DDP's wrapper: DDP's buffer broadcast
  is outside it). Not forward under ZeRO-3 or FSDP, whose forward gathers parameters. On GPUs forward is
  timed with CUDA events, read at report time. With them, what the rank's machine was doing: its load average and
  cores, the run's own threads there, and how long the training thread waited for a CPU per step (the kernel's
  run-queue delay), so that kit can say a straggler was slowed by a loaded machine.

On under kit (KIT_RUN_ID set) unless KIT_INSIGHT=0; a plain `python -m train` prints none of it. This module
does not import kit: the mark is spelled here and in launcher/insight/events.py (tests hold them equal).
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager

MARK = "kit-insight: "
ATTEMPT_RDZV = "kit-attempt-"  # launcher/planning/attempt.py spells the same (tests hold them equal)
REPORT_EVERY_S = float(os.environ.get("KIT_INSIGHT_EVERY") or 5.0)
PROGRESS_EVERY_S = 0.5  # the lost work after a failure is known to this much


def enabled() -> bool:
    return os.environ.get("KIT_INSIGHT", "") != "0" and (
        bool(os.environ.get("KIT_RUN_ID")) or os.environ.get("KIT_INSIGHT") == "1"
    )


def process_start() -> float:
    """When this process started (wall clock), from /proc: the imports before any of our code count too."""
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:  # no psutil or no /proc: the moment we were asked
        return time.time()


def attempt_fields(env=os.environ) -> dict:
    """Which attempt of a kit run this process belongs to, on every event, so that kit's report gives each event to
    the attempt that emitted it (a time window cannot: a fast restart starts the next attempt within a second).
    `a`: the N of kit's rendezvous id `kit-attempt-N`, which kit exports for a restarted attempt on the local and
    SSH backends (launcher/planning/attempt.py; attempt 1 keeps torchrun's default id); `sr`: a SLURM job's
    requeue count, whose attempts are requeues of one script (kit reads it only for such a backend)."""
    rdzv = env.get("PET_RDZV_ID", "")
    number = rdzv[len(ATTEMPT_RDZV) :] if rdzv.startswith(ATTEMPT_RDZV) else ""
    out = {"a": int(number) if number.isdigit() else 1}
    if env.get("SLURM_RESTART_COUNT", "").isdigit():
        out["sr"] = int(env["SLURM_RESTART_COUNT"])
    return out


_ATTEMPT = attempt_fields()


def emit(event: str, **fields) -> None:
    print(
        MARK + json.dumps({"e": event, "t": round(time.time(), 3), **_ATTEMPT, **fields}), file=sys.stdout, flush=True
    )


class Insight:
    """One per process. `main`: this process tells the timeline; every process reports its sections."""

    def __init__(self, rank: int = 0, main: bool = True, on: bool | None = None, phase: str | None = None):
        self.on = enabled() if on is None else on
        self.rank, self.main = rank, main
        self.phase = phase  # the training loop's phase ("pretrain", "train") on its timeline events
        self._data = self._forward = 0.0  # seconds this step
        self._sums = [0.0, 0.0]  # over the window: data, forward
        self._steps, self._from = 0, None
        self._window = None
        self._events = []  # CUDA (start, end) pairs of this window's forwards
        self._started = None  # forward's start (CPU clock) in the current call
        self._timed_forward = False
        self._first = True
        self._next_progress = 0.0
        self._waited = None  # the training thread's CPU wait so far (seconds)

    # --- the timeline (main process) --------------------------------------------------------------------------
    def event(self, name: str, **fields) -> None:
        if self.on and self.main:
            emit(name, **({"phase": self.phase} if self.phase else {}), **fields)

    @contextmanager
    def span(self, name: str, **fields):
        """The block's start and end as one event; the dict yielded takes fields known only at its end."""
        t0, late = time.time(), {}
        try:
            yield late
        finally:
            self.event(name, t0=round(t0, 3), t1=round(time.time(), 3), **fields, **late)

    # --- sections (every rank) --------------------------------------------------------------------------------
    def watch_forward(self, module, cuda: bool) -> None:
        """Time `module`'s own forward (the model inside its wrapper) while it trains."""
        if not self.on:
            return
        self._timed_forward = True
        if cuda:
            import torch

            def before(mod, args):
                if mod.training:
                    self._started = torch.cuda.Event(enable_timing=True)
                    self._started.record()

            def after(mod, args, out):
                if mod.training and self._started is not None:
                    end = torch.cuda.Event(enable_timing=True)
                    end.record()
                    self._events.append((self._started, end))
                    self._started = None
        else:

            def before(mod, args):
                if mod.training:
                    self._started = time.perf_counter()

            def after(mod, args, out):
                if mod.training and self._started is not None:
                    self._forward += time.perf_counter() - self._started
                    self._started = None

        self._hooks = [module.register_forward_pre_hook(before), module.register_forward_hook(after)]

    def close(self) -> None:
        """Stop timing the model's forward (its hooks removed)."""
        for hook in getattr(self, "_hooks", ()):
            hook.remove()
        self._hooks = []

    def batches(self, loader):
        """The loader's batches, the wait for each one timed (an epoch's first one, which syncs RNG, not)."""
        if not self.on:
            yield from loader
            return
        it = iter(loader)
        first = True
        while True:
            t0 = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                return
            if not first:
                self._data += time.perf_counter() - t0
            first = False
            yield batch

    def step_done(self, step: int) -> None:
        """After optimizer step `step`: count its sections; report the window when a REPORT_EVERY_S mark passed."""
        if not self.on:
            return
        now = time.time()
        if self._first:
            self._first = False
            self.event("first_step", step=step)
        if self.main and now >= self._next_progress:
            self._next_progress = now + PROGRESS_EVERY_S
            emit("progress", step=step)
        self._sums[0] += self._data
        self._sums[1] += self._forward
        self._data = self._forward = 0.0
        self._steps += 1
        self._from = step if self._from is None else self._from
        window = int(now // REPORT_EVERY_S)
        if self._window is None:
            self._window = window
            self._waited = cpu_wait()
        if window != self._window:
            self._report(step)
            self._window = window

    def _report(self, step: int) -> None:
        forward = self._sums[1] + sum(s.elapsed_time(e) / 1000 for s, e in self._flush_events())
        n = self._steps
        fields = {
            "r": self.rank,
            "w": self._window,
            "from": self._from,
            "to": step,
            "n": n,
            "data": round(self._sums[0] / n, 6),
        }
        if self._timed_forward:
            fields["forward"] = round(forward / n, 6)
        fields.update(machine())
        waited = cpu_wait()
        if waited is not None and self._waited is not None:
            fields["wait"] = round(max(0.0, waited - self._waited) / n, 6)
        self._waited = waited
        emit("sections", **fields)
        self._sums, self._steps, self._from = [0.0, 0.0], 0, None

    def _flush_events(self) -> list:
        events, self._events = self._events, []
        if events:
            events[-1][1].synchronize()  # once per window, not per step
        return events


def cpu_wait() -> float | None:
    """Seconds the calling thread has waited for a CPU while runnable (/proc's schedstat), or None."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def machine() -> dict:
    """This node's 1-minute load average and cores, and the run's own threads on it (its processes here, as the
    launcher numbers them, times torch's threads), where known."""
    out = {}
    try:
        out["load"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    if os.cpu_count():
        out["cpus"] = os.cpu_count()
    torch = sys.modules.get("torch")
    local = os.environ.get("LOCAL_WORLD_SIZE", "")
    if torch is not None and local.isdigit():
        out["threads"] = int(local) * torch.get_num_threads()
    return out


def forward_timed(accelerator) -> bool:
    """Whether forward holds no collective here: not under ZeRO-3 (parameters gathered) nor FSDP."""
    from accelerate.utils import DistributedType

    if accelerator.distributed_type == DistributedType.FSDP:
        return False
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    return not (plugin is not None and int(plugin.zero_stage or 0) == 3)


def timeline_start() -> None:
    """The main process (rank 0, as the launcher numbers it) says when it started and that its imports are done."""
    if enabled() and os.environ.get("RANK", "0") == "0":
        emit("start", at=round(process_start(), 3))
        emit("imported")


def finished_earlier(step: int | None, main: bool) -> None:
    """The main process says that an earlier attempt of the run finished it (train/resume.py): kit's report then
    counts that attempt's training as kept and this attempt's time as wrap-up."""
    if enabled() and main:
        emit("finished", step=step)


def world_formed(accelerator) -> None:
    if enabled() and accelerator.is_main_process:
        emit("world", world=accelerator.num_processes)


def for_trainer(accelerator, model, phase: str | None = None) -> Insight:
    insight = Insight(accelerator.process_index, accelerator.is_main_process, phase=phase)
    if forward_timed(accelerator):
        insight.watch_forward(accelerator.unwrap_model(model), accelerator.device.type == "cuda")
    return insight
