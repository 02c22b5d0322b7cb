"""How much each head counts in the classifier's logits: two weights fitted on the validation split after training.

Why: each head is trained by a loss of its own on the training set, which BERT, trained from scratch on ~14k
reviews, nearly memorises: its logits come out far more confident than its accuracy deserves (seed 43: BERT alone
0.817 validation accuracy, the n-gram head alone 0.856, their plain sum 0.852, below the head alone). Scaling the two
heads' logits by weights that minimise the cross-entropy on the validation split (`deep * a + wide * b`, a and b > 0:
temperature scaling with one temperature per head) lets the stronger head lead and the other correct it: in a 2-fold
cross-validation inside seed 43's validation split, 0.862 against 0.852 for the plain sum. Two numbers fitted on
1,700 examples: the validation accuracy after the fit is slightly optimistic (metrics.json says so); the test split
is never looked at.
"""

from __future__ import annotations

import math

import torch

SUM = (1.0, 1.0)  # no fit: the plain sum (`--ngram-mix sum`, and a model saved before the mix existed)


def weights(config) -> tuple[float, float]:
    mix = getattr(config, "ngram_mix", None)
    return (float(mix[0]), float(mix[1])) if mix else SUM


def fit(deep: torch.Tensor, wide: torch.Tensor, labels: torch.Tensor, steps: int = 200) -> tuple[float, float]:
    """Positive (a, b) minimising cross-entropy(a * deep + b * wide, labels), in float64 on the CPU (the same
    result from the same gathered logits on every rank); the plain sum if the fit does not converge to finite
    weights."""
    deep, wide, labels = deep.detach().double().cpu(), wide.detach().double().cpu(), labels.detach().cpu()
    log_w = torch.zeros(2, dtype=torch.float64, requires_grad=True)  # log-weights: positive without constraints
    opt = torch.optim.LBFGS([log_w], max_iter=steps, line_search_fn="strong_wolfe")

    def loss():
        opt.zero_grad()
        value = torch.nn.functional.cross_entropy(log_w[0].exp() * deep + log_w[1].exp() * wide, labels)
        value.backward()
        return value

    opt.step(loss)
    a, b = (float(x) for x in log_w.detach().exp())
    return (a, b) if all(math.isfinite(x) and 0 < x < 1e6 for x in (a, b)) else SUM


@torch.no_grad()
def head_logits(trainer, split: str = "validation") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Collective: each head's logits and the labels over the whole split, every example once (as evaluate())."""
    model, accelerator = trainer.model, trainer.accelerator
    model.eval()
    deep, wide, labels = [], [], []
    for batch in trainer.loaders[split]:
        out = trainer.forward(batch)
        parts = accelerator.gather_for_metrics((out.deep_logits.float(), out.wide_logits.float(), batch["labels"]))
        for kept, part in zip((deep, wide, labels), parts):
            kept.append(part.cpu())
    model.train()
    return torch.cat(deep), torch.cat(wide), torch.cat(labels)


def calibrate(trainer) -> dict:
    """Collective: fit the two weights on the validation split and set them in the model's config (saved with it);
    what was fitted, for metrics.json."""
    accelerator = trainer.accelerator
    with trainer.insight.span("eval", step=trainer.state.step):  # kit's goodput report counts it as evaluation
        deep, wide, labels = head_logits(trainer)
    mix = torch.tensor(fit(deep, wide, labels), dtype=torch.float64, device=accelerator.device)
    from accelerate.utils import broadcast

    a, b = (float(x) for x in broadcast(mix, from_process=0).cpu())  # one mix for the world, whatever the rank
    accelerator.unwrap_model(trainer.model).config.ngram_mix = [a, b]
    if (a, b) == SUM:  # a split the heads separate perfectly (or one label only): the weights would grow forever
        accelerator.print(
            "heads mixed on validation: the fit found no finite weights; the plain sum is kept", flush=True
        )

    def accuracy(logits):
        return round(float((logits.argmax(-1) == labels).double().mean()), 4)

    report = {
        "deep": a,
        "wide": b,
        "examples": len(labels),
        "validation_accuracy": {
            "bert": accuracy(deep),
            "ngram_head": accuracy(wide),
            "sum": accuracy(deep + wide),
            "mixed": accuracy(a * deep + b * wide),
        },
        "note": "weights fitted on the validation split: its accuracy after the fit is optimistic",
    }
    acc = report["validation_accuracy"]
    accelerator.print(
        f"heads mixed on validation: logits = {a:.3f} * BERT + {b:.3f} * n-gram head "
        f"(validation accuracy: BERT {acc['bert']:.4f}, head {acc['ngram_head']:.4f}, "
        f"sum {acc['sum']:.4f}, mixed {acc['mixed']:.4f}, fitted there)",
        flush=True,
    )
    return report
