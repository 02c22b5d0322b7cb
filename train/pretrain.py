"""The pretrain phase: the encoder learns the training texts as a masked language model before it is fine-tuned.

Same world, same loop (train/trainer.py), same checkpoints: `<output_dir>/pretrain/checkpoints/step-N`, sealed by
the same manifest and carrying the run's fingerprint with `phase: pretrain`.  Only the training split's texts are
read (validation texts measure the masked-token accuracy; test texts are never seen).  At its end each node's
owner of the output directory writes the encoder's weights (`pretrain/encoder.safetensors`) and a FINISHED marker;
every rank then loads them into the classifier.  A requeued run (`--resume auto`) continues an unfinished phase
from its checkpoint, reuses a finished one, and skips the phase when the fine-tuning has a checkpoint of its own.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
from pathlib import Path

import torch

from train import checkpoint, fingerprint, mlm
from train import model as model_lib
from train.resume import ResumeRefused, advice, fresh_but_own
from train.trainer import Trainer

PHASE = "pretrain"
ENCODER = "encoder.safetensors"
FINISHED = "FINISHED"


def directory(output_dir) -> Path:
    return Path(output_dir) / PHASE


def phase_fingerprint(run_fingerprint: dict) -> dict:
    return {**run_fingerprint, "phase": PHASE}


def enabled(args) -> bool:
    """Presets only: a local pretrained model directory brings its own pretraining."""
    return (args.pretrain_steps > 0 or args.pretrain_epochs > 0) and not model_lib.is_local_model(args.model)


def decide(resume: str, output_dir, current: dict) -> tuple[str, str | None]:
    """Main process: ('fresh'|'done'|'resume', checkpoint); ResumeRefused for another run's pretraining."""
    where = directory(output_dir)
    try:
        done = json.loads((where / FINISHED).read_text())
    except (OSError, ValueError):
        done = None
    if resume in ("no", "none", ""):  # the first attempt's: a restart continues what this run did (train/resume.py)
        run_id = os.environ.get("KIT_RUN_ID")
        if (
            done is not None
            and run_id
            and done.get("run_id") == run_id
            and not fingerprint.differences(done.get("fingerprint"), current)
        ):
            print("--resume no applies to the run's first attempt: reusing its own finished pretraining", flush=True)
        else:
            own = fresh_but_own(where, current)
            return ("fresh", None) if own is None else ("resume", str(own))
    if done is not None:
        diffs = fingerprint.differences(done.get("fingerprint"), current)
        if diffs:
            raise ResumeRefused(
                f"resume refused: {where} holds the pretraining of a different run ({'; '.join(diffs)}): {advice()}"
            )
        return "done", None
    path = checkpoint.latest(where)
    if path is None:
        return "fresh", None
    diffs = fingerprint.differences(checkpoint.read_fingerprint(path), current)
    if diffs:
        raise ResumeRefused(
            f"resume refused: checkpoint {path} was written by a different run ({'; '.join(diffs)}): {advice()}"
        )
    return "resume", str(path)


def agree(accelerator, resume: str, output_dir, current: dict, shared: bool, strategy: str) -> tuple[str, str | None]:
    """Collective: the main process's decision; a resumed or reused phase must be there on every node."""
    from accelerate.utils import broadcast_object_list

    verdict = [None]
    if accelerator.is_main_process:
        try:
            verdict[0] = ("ok",) + decide(resume, output_dir, current)
        except ResumeRefused as exc:
            verdict[0] = ("refused", str(exc), None)
    broadcast_object_list(verdict)
    status, kind, path = verdict[0]
    if status == "refused":
        raise ResumeRefused(kind)
    if kind == "resume" and resume in ("no", "none", "") and not shared and strategy not in ("ddp", "single"):
        accelerator.print(
            "--resume no: pretraining from scratch after all: without a shared file system only the "
            f"main node holds the {strategy} states of {path}"
        )
        return "fresh", None
    if kind == "resume" and not shared and strategy not in ("ddp", "single"):
        raise ResumeRefused(
            f"resume refused: without a shared file system only the main node holds the {strategy} "
            f"pretraining states of {path}; put --output-dir on a shared file system, or {advice()}"
        )
    have = (
        (directory(output_dir) / ENCODER).is_file()
        if kind == "done"
        else (checkpoint.is_complete(Path(path)) if kind == "resume" else True)
    )
    missing = int(accelerator.reduce(torch.tensor([0.0 if have else 1.0], device=accelerator.device), "sum").item())
    if missing and kind == "resume" and resume not in ("no", "none", ""):
        raise ResumeRefused(
            f"resume refused: {missing} rank(s) cannot see a complete copy of {path} (nodes "
            f"without a shared file system each need their own): {advice()}"
        )
    if missing:  # the encoder file (or, under --resume no, the run's own checkpoint) is gone somewhere: start over
        what = path if kind == "resume" else directory(output_dir) / ENCODER
        accelerator.print(f"pretrain: {missing} rank(s) miss {what}; pretraining again")
        return "fresh", None
    return kind, path


def phase_args(args) -> argparse.Namespace:
    """The loop's arguments for this phase: its own directory, length, learning rate; evaluation once per epoch."""
    return argparse.Namespace(
        **{
            **vars(args),
            "output_dir": str(directory(args.output_dir)),
            "epochs": args.pretrain_epochs,
            "max_steps": args.pretrain_steps,
            "lr": args.pretrain_lr,
            "eval_every": 0,
        }
    )


class PretrainTrainer(Trainer):
    """The training loop with the masked-token loss and accuracy as its evaluation."""

    name = PHASE

    @torch.no_grad()
    def evaluate(self, split: str = "validation") -> dict:
        self.model.eval()
        sums = torch.zeros(3, dtype=torch.float64)
        examples = 0
        for batch in self.loaders[split]:
            logits = self.forward(batch).logits
            parts = self.accelerator.gather_for_metrics(mlm.per_example(logits, batch["labels"]))
            sums += torch.stack([p.sum().cpu() for p in parts])
            examples += len(parts[0])
        self.model.train()
        return {"loss": float(sums[0] / sums[2]), "accuracy": float(sums[1] / sums[2]), "examples": examples}


class _TiedHead(logging.Filter):
    """accelerate warns at every save that it drops the MLM head's tied copy of the embeddings; it is tied again
    on load (a resumed phase continues exactly), so the warning only alarms."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not ("Removed shared tensor" in record.getMessage() and "mlm.cls.predictions" in record.getMessage())


def build(
    args, accelerator, classifier_config, encoded: dict, tokenizer, current: dict, preemption=None
) -> PretrainTrainer:
    logging.getLogger("accelerate.utils.other").addFilter(_TiedHead())
    pargs = phase_args(args)
    net = mlm.MaskedLM(classifier_config)
    optimizer = model_lib.build_optimizer(net, pargs.lr, pargs.weight_decay)
    train_dl = mlm.train_loader(
        encoded["train"], tokenizer, pargs.batch_size, pargs.seed, args.mask_prob, pargs.bucketing
    )
    sampler = train_dl.batch_sampler
    val_dl = mlm.eval_loader(encoded["validation"], tokenizer, pargs.eval_batch_size, pargs.seed, args.mask_prob)
    steps_per_epoch = -(-(len(sampler) // accelerator.num_processes) // pargs.grad_accum)
    total = pargs.max_steps or max(1, round(pargs.epochs * steps_per_epoch))
    warmup = int(round(pargs.warmup * total)) if pargs.warmup < 1 else int(pargs.warmup)
    scheduler = model_lib.build_scheduler(optimizer, warmup, total)
    net, optimizer, train_dl, val_dl, scheduler = accelerator.prepare(net, optimizer, train_dl, val_dl, scheduler)
    return PretrainTrainer(
        pargs,
        accelerator,
        net,
        optimizer,
        scheduler,
        {"train": train_dl, "validation": val_dl},
        sampler,
        [],
        fingerprint=phase_fingerprint(current),
        preemption=preemption,
    )


def encoder_state(accelerator, trainer) -> dict:
    """Collective: the encoder's full weights on every rank, whatever the strategy sharded."""
    from accelerate.utils import broadcast_object_list

    from train.results import full_state_dict, strategy_name

    state = full_state_dict(accelerator, trainer.model)  # DDP: on every rank; ZeRO-3 / FSDP: on rank 0
    prefix = "mlm.bert."
    mine = {k[len(prefix) :]: v.detach().cpu().clone() for k, v in (state or {}).items() if k.startswith(prefix)}
    if strategy_name(accelerator) not in ("ddp", "single"):
        box = [mine if accelerator.is_main_process else None]
        broadcast_object_list(box)
        mine = box[0]
    return mine


def finish(accelerator, trainer, owner: bool, output_dir, summary: dict) -> dict:
    """Collective: the encoder's weights, written with the FINISHED marker by each directory owner."""
    from safetensors.torch import save_file

    state = encoder_state(accelerator, trainer)
    where = directory(output_dir)
    with trainer.preemption.critical():
        if owner:
            tmp = where / (ENCODER + ".tmp")
            save_file({k: v.contiguous() for k, v in state.items()}, str(tmp))
            os.replace(tmp, where / ENCODER)
            marker = {
                "step": trainer.state.step,
                "fingerprint": trainer.fingerprint,
                "summary": summary,
                "run_id": os.environ.get("KIT_RUN_ID"),
            }
            (where / (FINISHED + ".tmp")).write_text(json.dumps(marker, indent=1, sort_keys=True) + "\n")
            os.replace(where / (FINISHED + ".tmp"), where / FINISHED)
        accelerator.wait_for_everyone()
    return state


def load_encoder(classifier, state: dict) -> None:
    """The pretrained encoder into the classifier; only its pooler (not part of the MLM) stays as initialised."""
    missing, unexpected = classifier.bert.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("pooler.") for k in missing):
        raise RuntimeError(
            f"pretrained encoder does not fit the classifier: missing {missing}, unexpected {unexpected}"
        )


def recorded(output_dir) -> dict | None:
    """What a finished phase in this directory did (for metrics.json when fine-tuning resumes), if anything."""
    try:
        done = json.loads((directory(output_dir) / FINISHED).read_text())
    except (OSError, ValueError):
        return None
    return {**done.get("summary", {}), "reused": True}


def read_encoder(output_dir) -> dict:
    from safetensors.torch import load_file

    return load_file(str(directory(output_dir) / ENCODER))


def clear(output_dir, owner: bool) -> None:
    if owner:
        shutil.rmtree(directory(output_dir), ignore_errors=True)


def before_fine_tuning(
    args,
    accelerator,
    live,
    classifier,
    encoded: dict,
    tokenizer,
    current: dict,
    owner: bool,
    shared: bool,
    resuming: bool,
) -> tuple[dict | None, Trainer | None]:
    """Collective, called by train/run.py before fine-tuning: (what the phase did for metrics.json, the phase's
    trainer when preemption stopped it (every rank saved), else None). A fine-tuning checkpoint being resumed holds
    the whole model already (its pretraining is only recorded)."""
    out = args.output_dir
    if not enabled(args):
        return None, None  # an earlier run's phase is cleared once the fine-tuning starts (train/run.py)
    if resuming:
        return recorded(out), None
    summary = run(args, accelerator, live, classifier, encoded, tokenizer, current, owner, shared)
    if summary is None:
        return None, live.trainer
    torch.manual_seed(args.seed)  # fine-tuning draws the same dropout whether it pretrained now or earlier
    return summary, None


def run(
    args, accelerator, live, classifier, encoded: dict, tokenizer, current: dict, owner: bool, shared: bool
) -> dict | None:
    """Collective: pretrain (continue, or reuse a finished phase), then load the encoder into `classifier`.
    Returns what the phase did, for metrics.json; None when preempted (every rank saved a checkpoint)."""
    from train import precision, world_check
    from train.results import strategy_name

    out = args.output_dir
    kind, path = agree(accelerator, args.resume, out, phase_fingerprint(current), shared, strategy_name(accelerator))
    if kind == "done":
        load_encoder(classifier, read_encoder(out))
        summary = recorded(out) or {"reused": True}
        accelerator.print(f"pretrain: reusing the finished phase in {directory(out)} (step {summary.get('steps')})")
        return summary
    if kind == "fresh":
        clear(out, owner)
    if owner:
        directory(out).mkdir(parents=True, exist_ok=True)
    accelerator.wait_for_everyone()
    trainer = live.trainer = build(args, accelerator, classifier.config, encoded, tokenizer, current, live.preemption)
    world_check.check(accelerator, model=trainer.model)
    precision.require(accelerator, trainer, encoded["validation"])
    trainer.set_owner(owner)
    if path is not None:
        trainer.resume(path)
    if not trainer.train():
        return None
    trainer.preemption.raise_if_terminated()
    summary = {
        "steps": trainer.state.step,
        "epochs": trainer.state.epoch,
        "train_time_s": round(trainer.state.train_time, 3),
        "evals": trainer.state.evals,
        "train_log": trainer.state.train_log,
        "lr": args.pretrain_lr,
        "mask_prob": args.mask_prob,
    }
    load_encoder(classifier, finish(accelerator, trainer, owner, out, summary))
    last = trainer.state.evals[-1] if trainer.state.evals else None
    if last:
        accelerator.print(
            f"pretrain: done at step {trainer.state.step}: masked-token accuracy {last['accuracy']:.4f}"
            f" loss {last['loss']:.4f} (validation); the classifier starts from this encoder"
        )
    accelerator.free_memory()  # the MLM model, its optimizer and loaders are no part of the fine-tuning's state
    return {**summary, "reused": False}
