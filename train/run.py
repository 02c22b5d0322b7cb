"""Wiring: accelerator, world check, data, tokenizer, model, prepare, resume, train, test, outputs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

from train import EXIT_BAD_DATA, EXIT_PREEMPTED, EXIT_WORLD_CHECK, checkpoint, data, model as model_lib
from train import outputs, preempt, results, tokenize, world_check
from train.batching import eval_loader, train_loader
from train.progress import quiet_library_bars
from train.trainer import Trainer


def make_accelerator(args):
    from accelerate import Accelerator
    from accelerate.utils import InitProcessGroupKwargs

    handlers = []
    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1 and "MASTER_ADDR" in os.environ  # torchrun's env
    if not torch.cuda.is_available() and launched:
        # accelerate + DeepSpeed on CPU only forms a world with gloo (FACTS.md); harmless for DDP on CPU.
        # Not for a lone process: accelerate would then expect a process group that nobody initialised.
        handlers.append(InitProcessGroupKwargs(backend="gloo"))
    return Accelerator(gradient_accumulation_steps=args.grad_accum, step_scheduler_with_optimizer=False,
                       kwargs_handlers=handlers)


def load_data(args, accelerator):
    """Splits, tokenizer and tokenized data; built by one process per node, then read by all."""
    splits = data.load_splits(args.data, args.text_column, args.label_column, args.seed, args.val_fraction,
                              args.test_fraction, args.dedupe)
    cache = Path(args.cache_dir)
    with accelerator.local_main_process_first():
        if model_lib.is_local_model(args.model):
            tok_dir = Path(args.model)
        else:
            tok_dir = tokenize.trained_tokenizer_dir(cache, splits, args.vocab_size)
        encoded = tokenize.encode_splits(cache, splits, tok_dir, args.max_length)
    return splits, tokenize.load_tokenizer(tok_dir), encoded


def _warmup_steps(args, total: int) -> int:
    return int(round(args.warmup * total)) if args.warmup < 1 else int(args.warmup)


def _set_ds_micro_batch(accelerator, batch_size: int) -> None:
    # The train loader has a batch sampler (no batch_size), so accelerate cannot fill DeepSpeed's "auto" value.
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    if plugin is not None and plugin.deepspeed_config.get("train_micro_batch_size_per_gpu", "auto") == "auto":
        plugin.deepspeed_config["train_micro_batch_size_per_gpu"] = batch_size


def build_trainer(args, accelerator, splits, tokenizer, encoded) -> Trainer:
    net = model_lib.build_model(args.model, len(splits.labels), len(tokenizer), args.max_length, args.dropout)
    net.config.id2label = dict(enumerate(splits.labels))
    net.config.label2id = {name: i for i, name in enumerate(splits.labels)}
    optimizer = model_lib.build_optimizer(net, args.lr, args.weight_decay)
    train_dl = train_loader(encoded["train"], args.batch_size, args.seed, tokenizer.pad_token_id, args.bucketing)
    sampler = train_dl.batch_sampler
    val_dl = eval_loader(encoded["validation"], args.eval_batch_size, tokenizer.pad_token_id)
    test_dl = eval_loader(encoded["test"], args.eval_batch_size, tokenizer.pad_token_id)
    # Steps are known only after sharding; the scheduler object is filled in below, before prepare().
    per_rank_batches = len(sampler) // accelerator.num_processes
    steps_per_epoch = -(-per_rank_batches // args.grad_accum)
    total = args.max_steps or max(1, round(args.epochs * steps_per_epoch))
    scheduler = model_lib.build_scheduler(optimizer, _warmup_steps(args, total), total)
    _set_ds_micro_batch(accelerator, args.batch_size)
    net, optimizer, train_dl, val_dl, test_dl, scheduler = accelerator.prepare(
        net, optimizer, train_dl, val_dl, test_dl, scheduler)
    world_check.check(accelerator, model=net)  # the strategy must have engaged on the prepared model
    loaders = {"train": train_dl, "validation": val_dl, "test": test_dl}
    trainer = Trainer(args, accelerator, net, optimizer, scheduler, loaders, sampler, splits.labels)
    assert trainer.total_steps == total, (trainer.total_steps, total)
    return trainer


def run(args) -> int:
    torch.manual_seed(args.seed)  # same initial weights on every rank, before any model is built
    quiet_library_bars()
    accelerator = make_accelerator(args)
    try:
        world_check.check(accelerator)
    except world_check.WorldCheckError as exc:
        print(exc, file=sys.stderr, flush=True)
        return EXIT_WORLD_CHECK
    out = Path(args.output_dir)
    if accelerator.is_local_main_process:
        out.mkdir(parents=True, exist_ok=True)
        preempt.clear_marker(out)
    try:
        splits, tokenizer, encoded = load_data(args, accelerator)
    except data.DataError as exc:
        print(f"bad data: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_DATA
    try:
        trainer = build_trainer(args, accelerator, splits, tokenizer, encoded)
    except world_check.WorldCheckError as exc:
        print(exc, file=sys.stderr, flush=True)
        return EXIT_WORLD_CHECK
    return _train_and_report(args, accelerator, trainer, tokenizer, out)


def _train_and_report(args, accelerator, trainer, tokenizer, out: Path) -> int:
    resume_from = checkpoint.resolve_resume(args.resume, out)
    if resume_from is not None:
        trainer.resume(resume_from)
    if not trainer.train():
        if accelerator.is_main_process:
            preempt.write_marker(out, trainer.state.step, trainer.checkpoint_path, trainer.preemption.signal_name)
        accelerator.print(f"preempted at step {trainer.state.step}: checkpoint {trainer.checkpoint_path}, "
                          f"exit {EXIT_PREEMPTED}")
        accelerator.wait_for_everyone()
        return EXIT_PREEMPTED
    results.finish(args, accelerator, trainer, tokenizer, out)
    accelerator.end_training()
    return 0
