"""Helpers for tests/train: small synthetic datasets and training arguments for tiny runs."""

from __future__ import annotations

import json
import random
from pathlib import Path

_POS = ["很好", "喜欢", "满意", "不错", "推荐", "great", "love"]
_NEG = ["很差", "失望", "退货", "糟糕", "不好", "awful", "hate"]
_FILL = ["这本书", "质量", "物流", "价格", "包装", "服务", "内容", "the", "product", "was"]


def synthetic_rows(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """A learnable two-class task with texts of varied length (for bucketing and padding)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = "pos" if i % 2 == 0 else "neg"
        words = [rng.choice(_FILL) for _ in range(rng.randint(1, 12))]
        words.insert(rng.randint(0, len(words)), rng.choice(_POS if label == "pos" else _NEG))
        rows.append(("".join(words) + f" {i}", label))
    return rows


def write_csv(path: Path, rows, text_col="text", label_col="label", delimiter=",") -> Path:
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter=delimiter)
        w.writerow([text_col, label_col])
        w.writerows(rows)
    return path


def write_jsonl(path: Path, rows, text_col="text", label_col="label") -> Path:
    path.write_text("".join(json.dumps({text_col: t, label_col: l}, ensure_ascii=False) + "\n" for t, l in rows),
                    encoding="utf-8")
    return path


def tiny_args(data: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    """Train arguments for a model and run small enough for multi-process tests on 2 cores."""
    return ["--data", str(data), "--output-dir", str(out), "--cache-dir", str(cache), "--model", "tiny",
            "--vocab-size", "200", "--max-length", "32", "--batch-size", "8", "--eval-batch-size", "16",
            "--lr", "1e-3", "--resume", "no", "--log-every", "5", "--pretrain-epochs", "0", *extra]


def by_hand_env(**extra: str) -> dict:
    """The environment of `python -m train` run by hand: no kit, accelerate or torchrun variables."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "ACCELERATE_", "WORLD_SIZE"))}
    env.update(extra)
    return env


def train_by_hand(argv: list[str], timeout: float = 300, **env: str):
    """One process, `python -m train argv`, to completion."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "train", *argv], cwd=repo, env=by_hand_env(**env),
                          capture_output=True, text=True, timeout=timeout)


def resumable_args(data: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    """tiny_args without `--resume no`: the default, --resume auto, is what these tests are about."""
    args = tiny_args(data, out, cache, *extra)
    at = args.index("--resume")
    return args[:at] + args[at + 2:]
