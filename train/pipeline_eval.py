"""A pipeline run's evaluation (forward only, each replica its share of the batches, the last stage's sums over the
replicas) and its final report: the test metrics, metrics.json and the classification report."""

from __future__ import annotations

import json
import os

import torch
import torch.distributed as dist

from train.pipeline import say


def evaluate(run, split: str, collect: bool = False) -> dict | None:
    """Forward only, each replica its share of the batches; the last stage's sums, over the replicas."""
    # The training batch's shape: a pipeline's stages exchange buffers of the shape of their first step.
    enc, size = run.encoded[split], run.args.batch_size
    chunks = [list(range(i, min(i + size, len(enc)))) for i in range(0, len(enc), size)]
    total = torch.zeros(3, device=run.device)  # loss sum, correct, examples
    preds: list[tuple[int, int]] = []
    run.module.eval()
    with torch.no_grad():
        for j in range(run.layout.replica, len(chunks), run.layout.replicas):
            ids, mask, labels = run.batch(split, chunks[j], size)
            if run.layout.first:
                run.schedule.eval(ids, mask)
            elif run.layout.last:
                logits = run.schedule.eval(target=labels.clamp(min=0), losses=[])
                real = labels >= 0
                total[0] += torch.nn.functional.cross_entropy(logits[real], labels[real], reduction="sum")
                guess = logits.argmax(-1)
                total[1] += (guess[real] == labels[real]).sum()
                total[2] += real.sum()
                if collect:
                    preds += list(zip(labels[real].tolist(), guess[real].tolist()))
            else:
                run.schedule.eval()
    run.module.train()
    if not run.layout.last:
        return None
    dist.all_reduce(total, group=run.stage_group)
    result = {
        "loss": total[0].item() / max(1, total[2].item()),
        "accuracy": total[1].item() / max(1, total[2].item()),
        "examples": int(total[2].item()),
    }
    if collect:
        everyone = [None] * run.layout.replicas
        dist.all_gather_object(everyone, preds, group=run.stage_group)
        result["pairs"] = [p for part in everyone for p in part]
    return result


def evaluate_and_record(run) -> None:
    result = evaluate(run, "validation")
    if result is not None and run.layout.replica == 0:
        say(
            f"eval step {run.step}: loss {result['loss']:.4f} accuracy {result['accuracy']:.4f} "
            f"({result['examples']} examples)"
        )
        run.evals.append({"step": run.step, **result})


def report(run) -> None:
    test = evaluate(run, "test", collect=True)
    if not (run.layout.last and run.layout.replica == 0):
        dist.barrier()
        return
    from sklearn.metrics import classification_report, confusion_matrix

    pairs = test.pop("pairs")
    y, p = [a for a, _ in pairs], [b for _, b in pairs]
    labels = list(range(len(run.splits.labels)))
    report = classification_report(y, p, labels=labels, target_names=run.splits.labels, digits=4, zero_division=0)
    (run.out / "classification_report.txt").write_text(
        report
        + "\nconfusion matrix (rows: true, columns: predicted)\n"
        + str(confusion_matrix(y, p, labels=labels))
        + "\n"
    )
    samples = run.step * run.args.batch_size * run.layout.replicas
    metrics = {
        "evals": run.evals,
        "test": test,
        "steps": run.step,
        "world_size": run.world,
        "strategy": "pipeline",
        "mixed_precision": "no",
        "labels": run.splits.labels,
        "pipeline": {"stages": run.stages, "replicas": run.layout.replicas, "microbatches": run.microbatches},
        "samples_per_s": samples / max(1e-9, getattr(run, "train_seconds", 0.0) or 1e-9),
        "args": {k: v for k, v in vars(run.args).items() if isinstance(v, (int, float, str, bool))},
        "run_id": os.environ.get("KIT_RUN_ID"),
    }
    (run.out / "metrics.json").write_text(json.dumps(metrics, indent=1))
    say(
        f"test accuracy {test['accuracy']:.4f} loss {test['loss']:.4f} ({test['examples']} examples); "
        f"world {run.world} pipeline {run.stages}x{run.layout.replicas}"
    )
    dist.barrier()
