"""What a checkpoint must share with the current run for the run to continue it.

Every checkpoint manifest and the FINISHED marker carry this fingerprint.  It holds what shapes the training
trajectory or the checkpoint's layout: the model's configuration, the data and its split, the strategy, world size
and precision, and the optimisation hyperparameters.  Settings that only change what is logged or how often a
checkpoint is written (eval/save/log intervals, eval batch size, output and cache paths) are left out, so a
requeued run may change them and still resume.
"""

from __future__ import annotations

# Hyperparameters that change the trajectory (names of `python -m train` arguments).
TRAJECTORY_ARGS = (
    "batch_size",
    "grad_accum",
    "lr",
    "weight_decay",
    "warmup",
    "epochs",
    "max_steps",
    "max_grad_norm",
    "bucketing",
    "seed",
    "max_length",
    "dedupe",
    "cjk",
    "pretrain_epochs",
    "pretrain_steps",
    "pretrain_lr",
    "mask_prob",
)
# Model configuration keys that decide the checkpoint's tensors or the model's behaviour.
MODEL_KEYS = (
    "model_type",
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "num_labels",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "id2label",
)


def build(args, model_config, data_fingerprint: str, strategy: str, world_size: int, precision: str) -> dict:
    """The run's fingerprint: plain JSON values, compared key by key."""
    config = model_config.to_dict()
    out = {
        "model": args.model,
        "data": data_fingerprint,
        "strategy": strategy,
        "world_size": world_size,
        "mixed_precision": precision,
    }
    out.update({f"model.{k}": _plain(config.get(k)) for k in MODEL_KEYS})
    out.update({k: _plain(getattr(args, k)) for k in TRAJECTORY_ARGS})
    if config.get("ngram_buckets"):
        # Only with the n-gram head: BERT alone keeps the fingerprint it had before the head, so its checkpoints
        # still resume.
        out.update(
            {
                "model.ngram_buckets": config["ngram_buckets"],
                "model.ngram_max_n": config.get("ngram_max_n"),
                "ngram_lr": args.ngram_lr,
            }
        )
        if config.get("ngram_input", "tokens") != "tokens":  # a token head's checkpoints from before still resume
            out["model.ngram_input"] = config["ngram_input"]
    return out


def _plain(value):
    # JSON round trip: dict keys become strings, tuples become lists.
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def differences(stored: dict | None, current: dict) -> list[str]:
    """Human-readable 'key old -> new' for every key that differs (empty: the runs match)."""
    if not stored:
        return ["the checkpoint has no fingerprint (written by an older kit)"]
    out = []
    for key in sorted(set(stored) | set(current)):
        old, new = stored.get(key, "<unset>"), current.get(key, "<unset>")
        if old != new:
            out.append(f"{key} {_show(key, old)} -> {_show(key, new)}")
    return out


def _show(key: str, value) -> str:
    if key == "data":
        return f"<data/split {value}>"
    return str(value)
