"""Checkpoints that a crash cannot corrupt, and discovery of the latest complete one.

Every rank writes into ``checkpoints/.tmp-step-N`` (accelerate's save_state is collective under DeepSpeed/FSDP);
after a barrier the local main process of each node writes ``kit_manifest.json`` (the trainer state plus the
size of every file) and renames the directory to ``checkpoints/step-N``.  ``--resume auto`` takes the newest
``step-N`` whose manifest matches the files on disk, so a truncated or half-copied checkpoint is skipped; the
manifest's fingerprint then decides whether this run may continue it (train/resume.py).

Nodes without a shared file system each keep their own copy (the local main process owns it).  Under DDP the
main process alone would write weights and optimizer state, so accelerate's ``save_on_each_node`` is switched on
there and every copy is complete; other strategies refuse to resume from such copies (train/resume.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path

import torch

MANIFEST = "kit_manifest.json"
_NAME = re.compile(r"^step-(\d+)$")


def checkpoints_dir(output_dir: Path) -> Path:
    return Path(output_dir) / "checkpoints"


def file_sizes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def directory_owner(accelerator, directory: Path) -> bool:
    """Collective.  True on exactly one process per file system holding `directory`: the main process, plus
    the local main process of each node that does not see the main process's files (no shared file system)."""
    from accelerate.utils import broadcast_object_list

    token = [uuid.uuid4().hex]
    broadcast_object_list(token)
    probe = Path(directory) / f".kit-fs-probe-{token[0]}"
    if accelerator.is_main_process:
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text("")
    accelerator.wait_for_everyone()
    owner = accelerator.is_main_process or (accelerator.is_local_main_process and not probe.exists())
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        probe.unlink()
    return owner


def shared_file_system(accelerator, owner: bool) -> bool:
    """Collective.  True when one process owns the directory for everyone (all nodes see the same files)."""
    count = torch.tensor([1.0 if owner else 0.0], device=accelerator.device)
    return int(accelerator.reduce(count, reduction="sum").item()) == 1


def save(
    accelerator, output_dir: Path, step: int, state: dict, keep: int, owner: bool, fingerprint: dict | None = None
) -> Path:
    """Collective: every rank must call it at the same step.  `owner`: see directory_owner."""
    root = checkpoints_dir(output_dir)
    tmp, final = root / f".tmp-step-{step}", root / f"step-{step}"
    if owner:
        shutil.rmtree(tmp, ignore_errors=True)  # leftovers of a crash mid-save
        tmp.mkdir(parents=True, exist_ok=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))
    accelerator.wait_for_everyone()
    if owner:
        manifest = {
            "step": step,
            "state": state,
            "fingerprint": fingerprint,
            "run_id": os.environ.get("KIT_RUN_ID"),
            "files": file_sizes(tmp),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
        prune(root, keep)
    accelerator.wait_for_everyone()
    return final


def prune(root: Path, keep: int) -> None:
    complete = [p for _, p in _candidates(root)]
    for old in complete[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)


def _candidates(root: Path) -> list[tuple[int, Path]]:
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := _NAME.match(p.name))]
    return sorted(found)


def is_complete(path: Path) -> bool:
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    for rel, size in files.items():
        f = path / rel
        if not f.is_file() or f.stat().st_size != size:
            return False
    return bool(files)


def latest(output_dir: Path) -> Path | None:
    """Newest complete checkpoint, or None."""
    for _, path in reversed(_candidates(checkpoints_dir(output_dir))):
        if is_complete(path):
            return path
    return None


def read_state(path: Path) -> dict:
    return json.loads((Path(path) / MANIFEST).read_text())["state"]


def read_fingerprint(path: Path) -> dict | None:
    """The fingerprint of the run that wrote the checkpoint (None: written before kit recorded one)."""
    return json.loads((Path(path) / MANIFEST).read_text()).get("fingerprint")


def read_run_id(path: Path) -> str | None:
    """The kit run (KIT_RUN_ID) that wrote the checkpoint; None when written by hand or before kit recorded it."""
    try:
        return json.loads((Path(path) / MANIFEST).read_text()).get("run_id")
    except (OSError, ValueError, AttributeError):
        return None


def resolve_resume(resume: str, output_dir: Path) -> Path | None:
    """The checkpoint --resume points at: 'no' -> None, 'auto' -> latest complete, else that directory."""
    if resume in ("no", "none", "", None):
        return None
    if resume == "auto":
        return latest(output_dir)
    path = Path(resume)
    if not is_complete(path):
        raise ValueError(f"--resume {resume}: not a complete checkpoint (missing or mismatching {MANIFEST})")
    return path
