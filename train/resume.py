"""Which checkpoint a run continues: only its own, and only while it is unfinished.

The output directory is fixed per job and ``--resume auto`` is the default, so a new run would otherwise quietly
continue an unrelated one and report its figures.  ``--resume auto`` therefore continues the newest complete
checkpoint only if its fingerprint (train/fingerprint.py) matches this run and the directory holds no FINISHED
marker.  A requeued or interrupted run matches and resumes without any flag.  Everything else is refused with one
line that says what differs and what to do.  A run that starts from scratch clears what an earlier run left.

``--resume no`` applies to a kit run's first attempt only: every checkpoint records the run (KIT_RUN_ID, the same
in every attempt and requeue), so a restarted attempt continues the run's own newest checkpoint and removes only
what other runs wrote.  The job's arguments stay as planned: what runs is what `kit submit --dry-run` printed.

A restarted attempt of a kit run that finds the FINISHED marker of that same run (its KIT_RUN_ID and fingerprint)
has nothing to do: the earlier attempt wrote every output (metrics.json with the test split's figures, the
classification report, the curves, the model) before the marker, then one of its processes died (in the final
barrier, or while the world was torn down).  It says so and ends with success, touching nothing.  Only a restart
(attempt 2 or later, planning/attempt.py's rendezvous id or a SLURM requeue) does: attempt 1 under an id used again
(a deleted record's, a sweep trial run again) is another run, refused or started afresh as above.

The main process decides (it sees the main node's files) and tells the others.  Without a shared file system each
node must hold its own complete copy of the chosen checkpoint, which only DDP writes (save_on_each_node).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import torch

from train import checkpoint, fingerprint

FINISHED = "FINISHED"
# What an earlier run leaves in the output directory besides checkpoints (removed before a new run starts).
_RESULTS = ("metrics.json", "classification_report.txt", "curves.png")
_FIX = "train again from scratch with --resume no (replaces what is there) or use another --output-dir"
# Under kit the same advice in kit's words: the arguments go after `--`.
_KIT_FIX = (
    "train again from scratch with `kit submit JOB -- --resume no` (replaces what is there), another "
    "`-- --output-dir DIR`, or `make clean` for the demo's outputs"
)


def advice() -> str:
    """What to do about a refused resume, in the words of the caller (kit or by hand)."""
    return _KIT_FIX if os.environ.get("KIT_RUN_ID") else _FIX


class ResumeRefused(RuntimeError):
    """The output directory holds a run this one must not continue; the message is one line."""


class AlreadyFinished(Exception):
    """An earlier attempt of this run finished it: its outputs are all there; the message (one line) says so."""

    def __init__(self, message: str, step: int | None):
        super().__init__(message)
        self.step = step


def _read_finished(out: Path) -> dict | None:
    try:
        return json.loads((out / FINISHED).read_text())
    except (OSError, ValueError):
        return None


def _restarted() -> bool:
    """This process is a restarted attempt of a kit run (not its first attempt)."""
    from train.insight import attempt_fields

    fields = attempt_fields()
    return fields["a"] > 1 or fields.get("sr", 0) > 0


def finished_by_this_run(out: Path, current: dict) -> dict | None:
    """The FINISHED marker when an earlier attempt of this kit run wrote it with this run's fingerprint, and the
    outputs it sealed are this run's (metrics.json of the run id); else None."""
    run_id, done = os.environ.get("KIT_RUN_ID"), _read_finished(out)
    if not run_id or done is None or done.get("run_id") != run_id or not _restarted():
        return None
    if fingerprint.differences(done.get("fingerprint"), current):
        return None
    try:
        if json.loads((out / "metrics.json").read_text()).get("run_id") != run_id:
            return None
    except (OSError, ValueError, AttributeError):
        return None
    return done


def own_checkpoint(where: Path) -> Path | None:
    """The newest complete checkpoint under `where` when this kit run wrote it (an earlier attempt), else None."""
    run_id = os.environ.get("KIT_RUN_ID")
    path = checkpoint.latest(where)
    if not run_id or path is None or checkpoint.read_run_id(path) != run_id:
        return None
    return path


def fresh_but_own(where: Path, current: dict) -> Path | None:
    """`--resume no`: None (start from scratch), or the run's own checkpoint that a restarted attempt continues.
    A checkpoint of this run id with other arguments is a new run that took the id again (a deleted record's, a
    sweep trial run again): `--resume no` starts it afresh as asked, never a refusal."""
    path = own_checkpoint(where)
    if path is None or fingerprint.differences(checkpoint.read_fingerprint(path), current):
        return None
    print(f"--resume no applies to the run's first attempt: continuing its own checkpoint {path}", flush=True)
    return path


def decide(resume: str, out: Path, current: dict) -> Path | None:
    """Main process: the checkpoint to continue, None to start from scratch; ResumeRefused otherwise, or
    AlreadyFinished when an earlier attempt of this run finished it."""
    done = finished_by_this_run(out, current)
    if done is not None:
        raise AlreadyFinished(
            f"the run was finished by an earlier attempt (step {done.get('step')}): its outputs in "
            f"{out} are complete; nothing to train",
            done.get("step"),
        )
    if resume in ("no", "none", ""):
        # A finished run under this id is no attempt to continue: a new run that reused the id starts afresh.
        path = None if _read_finished(out) is not None else fresh_but_own(out, current)
        if path is None:
            return None
    elif resume == "auto":
        done = _read_finished(out)
        if done is not None:
            diffs = fingerprint.differences(done.get("fingerprint"), current)
            changed = f"; this run differs: {', '.join(diffs)}" if diffs else ""
            raise ResumeRefused(
                f"resume refused: {out} holds a finished run (step {done.get('step')}{changed}); {advice()}"
            )
        path = checkpoint.latest(out)
        if path is None:
            return None
    else:
        path = Path(resume)
        if not checkpoint.is_complete(path):
            raise ResumeRefused(
                f"resume refused: --resume {resume} is not a complete checkpoint (missing or "
                f"mismatching {checkpoint.MANIFEST}); point it at a checkpoints/step-N directory"
            )
    diffs = fingerprint.differences(checkpoint.read_fingerprint(path), current)
    if diffs:
        raise ResumeRefused(
            f"resume refused: checkpoint {path} was written by a different run ({'; '.join(diffs)}): {advice()}"
        )
    return path


def agree(accelerator, resume: str, out: Path, current: dict, shared_fs: bool, strategy: str) -> Path | None:
    """Collective: the main process's decision, checked on every node.  Raises ResumeRefused on every rank."""
    from accelerate.utils import broadcast_object_list

    verdict = [None]
    if accelerator.is_main_process:
        verdict[0] = decision(resume, out, current)
    broadcast_object_list(verdict)
    kind, value = verdict[0][:2]
    if kind == "refused":
        raise ResumeRefused(value)
    if kind == "finished":
        raise AlreadyFinished(value, verdict[0][2])
    if value is None:
        return None
    fresh = resume in ("no", "none", "")  # a restart's own checkpoint: what cannot be continued starts afresh
    if not shared_fs and strategy not in ("ddp", "single"):
        why = f"without a shared file system only the main node holds the {strategy} model states of {value}"
        if fresh:
            accelerator.print(f"--resume no: starting from scratch after all: {why}")
            return None
        raise ResumeRefused(f"resume refused: {why}; put --output-dir on a shared file system, or {advice()}")
    missing = _missing_copies(accelerator, Path(value))
    if missing and fresh:
        accelerator.print(f"--resume no: starting from scratch after all: {missing} rank(s) cannot see {value}")
        return None
    if missing:
        raise ResumeRefused(
            f"resume refused: {missing} rank(s) cannot see a complete copy of {value} "
            f"(nodes without a shared file system each need their own): {advice()}"
        )
    return Path(value)


def decision(resume: str, out: Path, current: dict) -> tuple:
    """Main process: decide() as a value to send to every rank: ("ok", path or None), ("refused", line) or
    ("finished", line, step)."""
    try:
        path = decide(resume, out, current)
        return ("ok", None if path is None else str(path))
    except ResumeRefused as exc:
        return ("refused", str(exc))
    except AlreadyFinished as exc:
        return ("finished", str(exc), exc.step)


def _missing_copies(accelerator, path: Path) -> int:
    """Collective: how many ranks' file systems lack the complete checkpoint."""
    missing = torch.tensor([0.0 if checkpoint.is_complete(path) else 1.0], device=accelerator.device)
    return int(accelerator.reduce(missing, reduction="sum").item())


def start(out: Path, owner: bool, fresh: bool) -> None:
    """Before training (owners only): drop what an earlier attempt left; a fresh start also drops checkpoints."""
    if not owner:
        return
    for name in (FINISHED, *_RESULTS):
        with contextlib.suppress(FileNotFoundError):
            (out / name).unlink()
    if fresh:
        old = checkpoint.checkpoints_dir(out)
        if old.is_dir() and any(old.iterdir()):
            print(f"starting from scratch: removing the checkpoints of an earlier run in {old}", flush=True)
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(out / "model", ignore_errors=True)


def finish(out: Path, step: int, current: dict) -> None:
    """Main process, after every output is written: a later --resume auto must not continue this run."""
    data = {"step": step, "fingerprint": current, "run_id": os.environ.get("KIT_RUN_ID")}
    tmp = out / (FINISHED + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, out / FINISHED)
