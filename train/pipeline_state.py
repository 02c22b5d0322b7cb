"""A pipeline run's checkpoints: each stage's weights, optimizer and schedule (stage<S>.pt) sealed by the manifest
the ordinary loop uses, and --resume's decision, taken on rank 0 and shared with every rank."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import torch
import torch.distributed as dist

from train import EXIT_RESUME_REFUSED, checkpoint, preempt, resume
from train.pipeline import Fail, say


def save(run) -> None:
    root = checkpoint.checkpoints_dir(run.out)
    tmp, final = root / f".tmp-step-{run.step}", root / f"step-{run.step}"
    if run.rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    dist.barrier()
    if run.layout.replica == 0:  # replicas hold equal weights: one copy per stage
        torch.save(
            {
                "model": run.module.state_dict(),
                "optimizer": run.optimizer.state_dict(),
                "scheduler": run.scheduler.state_dict(),
                "evals": run.evals,
            },
            tmp / f"stage{run.layout.stage}.pt",
        )
    dist.barrier()
    if run.rank == 0:
        manifest = {
            "step": run.step,
            "state": {"step": run.step, "pipeline_stages": run.stages},
            "fingerprint": run.fingerprint,
            "run_id": os.environ.get("KIT_RUN_ID"),
            "files": checkpoint.file_sizes(tmp),
        }
        (tmp / checkpoint.MANIFEST).write_text(json.dumps(manifest, indent=1))
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
        checkpoint.prune(root, run.args.keep_checkpoints)
    run.checkpoint_path = final
    dist.barrier()


def resume_or_start(run) -> None:
    decision = [None]
    if run.rank == 0:
        decision[0] = resume.decision(run.args.resume, run.out, run.fingerprint)
    dist.broadcast_object_list(decision, src=0)
    kind, value = decision[0][:2]
    if kind == "refused":
        raise Fail(EXIT_RESUME_REFUSED, value if run.rank == 0 else "")
    if kind == "finished":
        raise resume.AlreadyFinished(value, decision[0][2])
    resume.start(run.out, run.rank == 0, fresh=value is None)
    if run.rank == 0:
        preempt.clear_marker(run.out)
    dist.barrier()
    if value is None:
        return
    state = torch.load(Path(value) / f"stage{run.layout.stage}.pt", map_location=run.device, weights_only=False)
    run.module.load_state_dict(state["model"])
    run.optimizer.load_state_dict(state["optimizer"])
    run.scheduler.load_state_dict(state["scheduler"])
    run.evals = state.get("evals", [])
    run.step = checkpoint.read_state(Path(value))["step"]
    run.checkpoint_path = Path(value)
    if run.rank == 0:
        say(f"resumed from {value} at step {run.step}")
