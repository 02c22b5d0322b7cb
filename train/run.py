"""The reference job's `run`: accelerator, world check, data, tokenizer, data check, model, resume, (pretrain),
prepare, train, test, outputs, in that order, in one function; the pieces it calls are above it."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from train import EXIT_BAD_DATA, EXIT_CONFIG, EXIT_PREEMPTED, EXIT_RESUME_REFUSED, EXIT_WORLD_CHECK
from train import accumulation, checkpoint, data, data_check, fingerprint, model as model_lib
from train import insight, precision, preempt, pretrain, results, resume, tokenizing, world_check
from train.batching import eval_loader, train_loader
from train.progress import quiet_library_bars
from train.trainer import Trainer


def make_accelerator(args):
    from accelerate import Accelerator
    from accelerate.utils import InitProcessGroupKwargs

    handlers = []
    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1 and "MASTER_ADDR" in os.environ  # torchrun's env
    if not torch.cuda.is_available() and launched:
        # accelerate + DeepSpeed on CPU forms a world only with an explicit gloo backend; harmless for DDP on CPU.
        # Not for a lone process: accelerate would then expect a process group that nobody initialised.
        handlers.append(InitProcessGroupKwargs(backend="gloo"))
    # accelerate lets ACCELERATE_GRADIENT_ACCUMULATION_STEPS override this; accumulation.resolve reconciles them.
    return Accelerator(
        gradient_accumulation_steps=args.grad_accum or 1, step_scheduler_with_optimizer=False, kwargs_handlers=handlers
    )


def load_data(args, accelerator):
    """Splits, tokenizer and tokenized data; built by one process per node, then read by all."""
    splits = data.load_splits(
        args.data, args.text_column, args.label_column, args.seed, args.val_fraction, args.test_fraction, args.dedupe
    )
    data.require_one_batch(splits, args.batch_size, accelerator.num_processes)
    cache = Path(args.cache_dir)
    with accelerator.local_main_process_first():
        if model_lib.is_local_model(args.model):
            tok_dir = Path(args.model)
        else:
            tok_dir = tokenizing.trained_tokenizer_dir(cache, splits, args.vocab_size, args.cjk)
        encoded = tokenizing.encode_splits(cache, splits, tok_dir, args.max_length)
    return splits, tokenizing.load_tokenizer(tok_dir), encoded


def same_pipeline(args, accelerator, splits, tokenizer, encoded) -> str | None:
    """Collective: the failure line when the ranks loaded different data, tokenizers or ids (else None)."""
    from accelerate.utils import gather_object

    mine = data_check.report(accelerator.process_index, splits, tokenizer, encoded)
    return data_check.check(
        mine, lambda report: gather_object([report]), args.cache_dir, model_lib.is_local_model(args.model)
    )


def _warmup_steps(args, total: int) -> int:
    return int(round(args.warmup * total)) if args.warmup < 1 else int(args.warmup)


def _set_ds_micro_batch(accelerator, batch_size: int) -> None:
    # The train loader has a batch sampler (no batch_size), so accelerate cannot fill DeepSpeed's "auto" value.
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    if plugin is not None and plugin.deepspeed_config.get("train_micro_batch_size_per_gpu", "auto") == "auto":
        plugin.deepspeed_config["train_micro_batch_size_per_gpu"] = batch_size


def special_ids(tokenizer) -> tuple[int, ...]:
    """[CLS], [SEP] and padding: no part of an example's n-grams."""
    return tuple(i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id) if i is not None)


def build_classifier(args, accelerator, splits, tokenizer):
    """The classifier (not yet prepared) and the run's fingerprint."""
    net = model_lib.build_model(
        args.model,
        len(splits.labels),
        len(tokenizer),
        args.max_length,
        args.dropout,
        args.ngram_buckets,
        special_ids(tokenizer),
        args.ngram_input,
    )
    net.config.id2label = dict(enumerate(splits.labels))
    net.config.label2id = {name: i for i, name in enumerate(splits.labels)}
    run_fingerprint = fingerprint.build(
        args,
        net.config,
        splits.fingerprint,
        results.strategy_name(accelerator),
        accelerator.num_processes,
        str(accelerator.mixed_precision),
    )
    return net, run_fingerprint


def build_trainer(
    args, accelerator, splits, tokenizer, encoded, net=None, run_fingerprint=None, preemption=None
) -> Trainer:
    """The prepared model, optimizer, schedule and loaders in a Trainer (checked: the strategy engaged)."""
    if args.grad_accum is None:  # a caller that made its own accelerator (bench/)
        args.grad_accum = accumulation.resolve(None, accelerator)
    if net is None:
        net, run_fingerprint = build_classifier(args, accelerator, splits, tokenizer)
    optimizer = model_lib.build_optimizer(net, args.lr, args.weight_decay, args.ngram_lr)
    chars = model_lib.reads_chars(net)  # batches carry the text's characters for the n-gram head
    pad = tokenizer.pad_token_id
    train_dl = train_loader(encoded["train"], args.batch_size, args.seed, pad, args.bucketing, chars)
    sampler = train_dl.batch_sampler
    val_dl = eval_loader(encoded["validation"], args.eval_batch_size, pad, chars)
    test_dl = eval_loader(encoded["test"], args.eval_batch_size, pad, chars)
    # Steps are known only after sharding; the scheduler object is filled in below, before prepare().
    per_rank_batches = len(sampler) // accelerator.num_processes
    steps_per_epoch = -(-per_rank_batches // args.grad_accum)
    total = args.max_steps or max(1, round(args.epochs * steps_per_epoch))
    scheduler = model_lib.build_scheduler(optimizer, _warmup_steps(args, total), total)
    _set_ds_micro_batch(accelerator, args.batch_size)
    net, optimizer, train_dl, val_dl, test_dl, scheduler = accelerator.prepare(
        net, optimizer, train_dl, val_dl, test_dl, scheduler
    )
    world_check.check(accelerator, model=net)  # the strategy must have engaged on the prepared model
    loaders = {"train": train_dl, "validation": val_dl, "test": test_dl}
    trainer = Trainer(
        args,
        accelerator,
        net,
        optimizer,
        scheduler,
        loaders,
        sampler,
        splits.labels,
        fingerprint=run_fingerprint,
        chars=chars,
        preemption=preemption,
    )
    assert trainer.total_steps == total, (trainer.total_steps, total)
    return trainer


@dataclass
class Live:
    """What the preemption handler needs of the run in progress: its accelerator and its current loop (the
    pretrain phase's, then the fine-tuning's), once they exist."""

    preemption: preempt.Preemption
    accelerator: Any = None
    trainer: Trainer | None = None


def run(args) -> int:
    """The reference job, top to bottom and the same on every rank: form the world, load and check the data, build
    the classifier, decide what to resume, (pretrain), train, test, write the outputs. Every known failure ends
    here with its one line and exit code (train/__init__.py); the step itself is in Trainer.train."""
    insight.timeline_start()  # for kit's goodput report: when this process started, its imports done
    torch.manual_seed(args.seed)  # same initial weights on every rank, before any model is built
    quiet_library_bars()
    live = Live(preempt.Preemption())
    live.preemption.install()  # from the first moment: SIGTERM while loading data stops the run too
    try:  # the outer handlers also cover a signal or a broken world met while a failure is being said
        try:
            accelerator = live.accelerator = make_accelerator(args)
            insight.world_formed(accelerator)
            world_check.check(accelerator)
            args.grad_accum = accumulation.resolve(args.grad_accum, accelerator)
            out = Path(args.output_dir)
            if accelerator.is_local_main_process:
                out.mkdir(parents=True, exist_ok=True)
            splits, tokenizer, encoded = load_data(args, accelerator)
            problem = same_pipeline(args, accelerator, splits, tokenizer, encoded)
            if problem:
                return _fail(EXIT_WORLD_CHECK, problem, accelerator)
            net, run_fingerprint = build_classifier(args, accelerator, splits, tokenizer)
            owner, shared, path = _decide_resume(args, accelerator, out, run_fingerprint)
            _set_ds_micro_batch(accelerator, args.batch_size)
            pretrained, stopped = pretrain.before_fine_tuning(
                args,
                accelerator,
                live,
                net,
                encoded,
                tokenizer,
                run_fingerprint,
                owner,
                shared,
                resuming=path is not None,
            )
            if stopped is not None:
                return _stopped(accelerator, stopped, out)
            trainer = live.trainer = build_trainer(
                args, accelerator, splits, tokenizer, encoded, net, run_fingerprint, live.preemption
            )
            precision.require(accelerator, trainer, encoded["validation"])
            _start(args, accelerator, trainer, out, owner, path)
            if not trainer.train():
                return _stopped(accelerator, trainer, out)
            trainer.preemption.raise_if_terminated()  # a SIGTERM in the last moments of the loop
            results.finish(args, accelerator, trainer, tokenizer, out, pretrained)
            if accelerator.is_main_process:
                resume.finish(out, trainer.state.step, trainer.fingerprint)
            # Every rank destroys the process group together: a rank that tore down its gloo pairs while the main
            # process still wrote its outputs died in C++ ("terminate called without an active exception", SIGABRT)
            # after a finished run, seen once in CI.
            accelerator.wait_for_everyone()
            accelerator.end_training()
            return 0
        except world_check.WorldCheckError as exc:  # said by this rank, no collective: the world may not be whole
            print(exc, file=sys.stderr, flush=True)
            return EXIT_WORLD_CHECK
        except data.DataError as exc:  # every rank read the same files and fails alike
            print(f"bad data: {exc}", file=sys.stderr, flush=True)
            return EXIT_BAD_DATA
        except accumulation.AccumulationError as exc:
            return _fail(EXIT_CONFIG, f"config error: {exc}", live.accelerator)
        except precision.PrecisionError as exc:
            return _fail(EXIT_WORLD_CHECK, str(exc), live.accelerator)
        except resume.ResumeRefused as exc:
            return _fail(EXIT_RESUME_REFUSED, str(exc), live.accelerator)
        except resume.AlreadyFinished as exc:
            return _finished_earlier(live.accelerator, exc)
    except preempt.Preempted as exc:
        return _preempted(args, live, exc.signal_name)
    except Exception:
        if live.preemption.terminate:  # a collective failed because the other ranks had already stopped
            return _preempted(args, live, "SIGTERM")
        raise


def _fail(code: int, message: str, accelerator=None) -> int:
    """One line on the main process; every rank returns `code` (after the line is out)."""
    if accelerator is None or accelerator.is_main_process:
        print(message, file=sys.stderr, flush=True)
    if accelerator is not None:
        accelerator.wait_for_everyone()
        # Leave the world together: a rank whose gloo pairs were torn down by the interpreter's exit while another
        # still held them died with SIGABRT instead of `code` (seen in CI after a failed data check).
        accelerator.end_training()
    return code


def _finished_earlier(accelerator, exc: resume.AlreadyFinished) -> int:
    """Collective: an earlier attempt of this run finished it (train/resume.py); nothing is touched, every rank
    ends with success."""
    if accelerator.is_main_process:
        print(exc, flush=True)
    insight.finished_earlier(exc.step, accelerator.is_main_process)
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return 0


def _decide_resume(args, accelerator, out: Path, run_fingerprint: dict):
    """Collective: who owns the output directory, is it shared, which fine-tuning checkpoint (if any) to continue.
    Decided before any training, so that a refused resume stops the run before the pretrain phase."""
    owner = checkpoint.directory_owner(accelerator, out)
    shared = checkpoint.shared_file_system(accelerator, owner)
    if not shared:
        # Each node keeps its own copy; under DDP the full state (weights, optimizer) must be in every copy.
        accelerator.project_configuration.save_on_each_node = True
    path = resume.agree(accelerator, args.resume, out, run_fingerprint, shared, results.strategy_name(accelerator))
    if owner:
        preempt.clear_marker(out)
    return owner, shared, path


def _start(args, accelerator, trainer, out: Path, owner: bool, path) -> None:
    """Collective: a clean start or the chosen checkpoint. Only here, once everything is built and checked, is an
    earlier run's output cleared (a run that fails before it has changed nothing)."""
    trainer.set_owner(owner)
    resume.start(out, owner, fresh=path is None)
    if path is None and not pretrain.enabled(args):
        pretrain.clear(out, owner)  # an earlier run's pretraining is no part of this one
    accelerator.wait_for_everyone()
    if path is not None:
        trainer.resume(path)


def _stopped(accelerator, trainer, out: Path) -> int:
    """Preempted in a training loop (pretraining or fine-tuning): every rank saved; the marker, exit 75."""
    if accelerator.is_main_process:
        preempt.write_marker(out, trainer.state.step, trainer.checkpoint_path, trainer.preemption.signal_name)
    accelerator.print(
        f"preempted at {trainer.prefix}step {trainer.state.step}: checkpoint {trainer.checkpoint_path}, "
        f"exit {EXIT_PREEMPTED}"
    )
    accelerator.wait_for_everyone()
    return EXIT_PREEMPTED


def _preempted(args, live: Live, signal_name: str) -> int:
    accelerator, trainer = live.accelerator, live.trainer
    return preempt.stopped_outside_loop(
        args.output_dir,
        trainer.state.step if trainer is not None else 0,
        trainer.checkpoint_path if trainer is not None else None,
        signal_name,
        accelerator is None or accelerator.is_main_process,
        EXIT_PREEMPTED,
    )
