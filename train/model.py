"""Model construction (size presets or a local pretrained directory), AdamW parameter groups, LR schedule."""

from __future__ import annotations

from pathlib import Path

import torch

from train.presets import NGRAM_BUCKETS, PRESETS  # noqa: F401  (NGRAM_BUCKETS: the default, named here too)


def is_local_model(model: str) -> bool:
    return model not in PRESETS


NGRAM_MAX_N = 3


def build_model(
    model: str,
    num_labels: int,
    vocab_size: int,
    max_length: int,
    dropout: float = 0.1,
    ngram_buckets: int = 0,
    skip_ids: tuple[int, ...] = (),
    ngram_input: str = "chars",
):
    """A preset built from BertConfig (random init) or a local pretrained directory (never downloaded); with
    `ngram_buckets` > 0, the n-gram head beside it (train/ngram_head.py) over the text's characters or, with
    `ngram_input="tokens"`, the token ids (`skip_ids`: the special tokens' ids, no part of a token n-gram)."""
    from transformers import BertConfig, BertForSequenceClassification

    cls = BertForSequenceClassification
    extra: dict = {}
    if ngram_buckets > 0:
        from train.ngram_model import BertWithNgrams

        cls = BertWithNgrams
        extra = dict(ngram_buckets=ngram_buckets, ngram_max_n=NGRAM_MAX_N, ngram_input=ngram_input)
    if is_local_model(model):
        path = Path(model)
        if not (path / "config.json").is_file():
            raise ValueError(
                f"--model {model!r}: neither a preset ({', '.join(PRESETS)}) "
                "nor a local model directory with config.json"
            )
        # The head's settings go into the config (a pretrained BERT's config has none; from_pretrained would pass
        # unknown keywords to the model's constructor).
        config = BertConfig.from_pretrained(str(path), num_labels=num_labels, local_files_only=True)
        config.ngram_mix = None  # fitted to the saved model, not to the one trained now (train/ngram_mix.py)
        if not extra and getattr(config, "ngram_buckets", None):
            config.ngram_buckets = 0  # BERT alone asked for (--ngram-buckets 0): the saved head is left out
        if extra and getattr(config, "ngram_buckets", None):  # a saved head keeps its shape and its input
            extra = dict(ngram_input=getattr(config, "ngram_input", "tokens"))  # saved before the choice: tokens
        for key, value in extra.items():
            setattr(config, key, value)
        if extra:
            config.ngram_skip_ids = sorted(set(skip_ids)) if config.ngram_input == "tokens" else []
        return cls.from_pretrained(str(path), config=config, local_files_only=True)
    if extra:
        extra["ngram_skip_ids"] = sorted(set(skip_ids)) if ngram_input == "tokens" else []
    config = BertConfig(
        vocab_size=vocab_size,
        max_position_embeddings=max(512, max_length),
        num_labels=num_labels,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        **PRESETS[model],
        **extra,
    )
    return cls(config)


def has_head(model: torch.nn.Module) -> bool:
    """Is this (unwrapped) model BERT with the n-gram head (not only a config that mentions one)?"""
    return isinstance(getattr(model, "ngrams", None), torch.nn.Module)


def reads_chars(model: torch.nn.Module) -> bool:
    """Does this (unwrapped) model's n-gram head take `char_ids` in its batches?"""
    from train.ngram_model import reads_chars as config_reads_chars

    return has_head(model) and config_reads_chars(model.config)


def _no_decay(name: str) -> bool:
    # Biases and LayerNorm weights are not regularised (as in the original BERT recipe).
    return name.endswith(".bias") or "LayerNorm" in name or "layer_norm" in name


def is_ngram_head(name: str) -> bool:
    return name.startswith("ngrams.") or ".ngrams." in name  # FSDP and DDP may prefix the names


def clipped_parameters(model: torch.nn.Module, fsdp: bool) -> list:
    """What gradient clipping bounds. BERT's step; the n-gram head's table, whose gradient norm dwarfs BERT's,
    stays out of it (clipped together, BERT barely moved: validation 0.856 against 0.865, seed 42). DeepSpeed's
    engine clips (or not) every parameter by its own config (`deepspeed.gradient_clipping`). Under FSDP the model
    is clipped whole: accelerate clips a subset of an FSDP model only by unscaling fp16 gradients twice (an error),
    and FSDP 1's flat parameters cannot be split."""
    if fsdp:
        return list(model.parameters())
    return [p for name, p in model.named_parameters() if not is_ngram_head(name)]


def param_groups(model: torch.nn.Module, weight_decay: float, ngram_lr: float | None = None) -> list[dict]:
    """AdamW's groups: decayed, not decayed, and the n-gram head's table (its own learning rate, no decay: a sparse
    bag whose rows each see few updates learns at a BERT learning rate far too slowly)."""
    decay, no_decay, ngrams = [], [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (ngrams if is_ngram_head(name) else no_decay if _no_decay(name) else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    if ngrams:
        groups.append({"params": ngrams, "weight_decay": 0.0, **({"lr": ngram_lr} if ngram_lr else {})})
    return groups


def build_optimizer(
    model: torch.nn.Module, lr: float, weight_decay: float, ngram_lr: float | None = None
) -> torch.optim.Optimizer:
    # Plain torch AdamW: DeepSpeed wraps it as a client optimizer (no compiled cpu_adam/fused_adam ops needed).
    return torch.optim.AdamW(param_groups(model, weight_decay, ngram_lr), lr=lr, betas=(0.9, 0.999), eps=1e-8)


def build_scheduler(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int):
    """Linear warmup to the peak LR, then linear decay to 0 at total_steps (transformers' own schedule)."""
    from transformers import get_linear_schedule_with_warmup

    return get_linear_schedule_with_warmup(optimizer, num_warmup_steps=warmup_steps, num_training_steps=total_steps)
