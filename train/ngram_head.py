"""The n-gram head: a bag of hashed 1..n-grams of the text's characters beside BERT, trained by a loss of its own.

Why: on a corpus of ~14k short reviews a small BERT trained from scratch reaches 0.846 validation accuracy, below a
character 1-3-gram logistic regression (0.862; bench/ngram_baseline.py). Character n-grams are what that baseline
knows. Here they are a hashed bag (fastText-style) whose per-label weights are learned with the model, on every
rank, in the same step. The head has its own cross-entropy loss (trained jointly with summed logits, BERT fits the
training set first and the head learns little: 0.854 against 0.865 with a loss per head, validation, seed 42), and
the classifier's logits are the sum of both heads'.

Its input is the text's own characters (code points, lowercased, whitespace runs made one space; `char_ids`), built
beside the token ids in the data pipeline, not the tokens: the job's 6000-piece vocabulary maps rare characters to
[UNK] and drops whitespace, and on seed 43's validation split a logistic regression on token 1-3-grams reached 0.859
against 0.867 on characters. The head can still read token ids (`ngram_input: tokens`, older saved models).

Hashing is plain integer arithmetic on the ids (same buckets on every rank and every run); padding (and, over
tokens, [CLS] and [SEP]) takes no part, so padding a batch does not change an example's logits.
"""

from __future__ import annotations

import re

import torch

MAX_CHARS = 1024  # characters of an example the head reads (the 99.9th percentile review has ~850)
CHARS_VERSION = "c1"  # part of the encoded cache's key: a change to char_ids must not reuse older caches
PAD_CHAR = 0  # NUL is dropped from the text, so 0 is free to pad with
PRIME = 1_000_003  # mixes one id into the running hash of an n-gram


class NgramBag(torch.nn.Module):
    def __init__(self, buckets: int, max_n: int, num_labels: int, skip_ids: list[int]):
        super().__init__()
        self.buckets, self.max_n = int(buckets), int(max_n)
        # Plain ints, not a buffer: transformers builds a loaded model on the meta device and refills only the
        # buffers it knows, so a buffer here would hold uninitialised memory after from_pretrained.
        self.skip_ids = tuple(sorted({int(i) for i in skip_ids}))
        self.bag = torch.nn.EmbeddingBag(self.buckets, num_labels, mode="sum")
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Zero: at the start the classifier's logits are BERT's alone.
        torch.nn.init.zeros_(self.bag.weight)

    def ngram_ids(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(bucket of every 1..max_n-gram, whether it is made of real tokens only), each [batch, grams]."""
        ids = input_ids.long()
        real = attention_mask.bool()
        for skip in self.skip_ids:  # comparisons with plain ints: no tensor made (nor copied to the GPU) per step
            real = real & (ids != skip)  # not in place: a bool mask is the caller's own tensor
        length = ids.shape[1]
        buckets, keep = [], []
        for n in range(1, self.max_n + 1):
            if length < n:
                break
            h = torch.full_like(ids[:, : length - n + 1], n)  # the order is part of the hash: "ab" is not "a","b"
            ok = torch.ones_like(h, dtype=torch.bool)
            for k in range(n):
                h = (h * PRIME + ids[:, k : length - n + 1 + k]) % self.buckets
                ok &= real[:, k : length - n + 1 + k]
            buckets.append(h)
            keep.append(ok)
        if not buckets:  # a text with no characters (an empty review): no n-grams, zero logits
            return torch.zeros_like(ids[:, :0]), torch.zeros_like(real[:, :0])
        return torch.cat(buckets, 1), torch.cat(keep, 1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Logits [batch, labels]: the sum of the example's n-gram weights over the square root of their count."""
        grams, keep = self.ngram_ids(input_ids, attention_mask)
        weights = keep.float() / keep.sum(1, keepdim=True).clamp(min=1).float().sqrt()
        batch, per = grams.shape
        offsets = torch.arange(batch, device=grams.device) * per  # all 0 for texts without characters
        return self.bag(grams.flatten(), offsets, per_sample_weights=weights.flatten().to(self.bag.weight.dtype))


_SPACES = re.compile(r"\s+")


def char_ids(text: str, limit: int = MAX_CHARS) -> list[int]:
    """What the head reads of a text: its code points, lowercased, each whitespace run one space, at most `limit`."""
    norm = _SPACES.sub(" ", text.replace("\x00", "").lower()).strip()
    return [ord(c) for c in norm[:limit]]


def char_batch(texts: list[str], limit: int = MAX_CHARS) -> torch.Tensor:
    """`char_ids` of each text, padded into one tensor: the model's `char_ids` input outside the training module
    (a saved model predicts with `model(**tokenizer(texts, ...), char_ids=char_batch(texts))`)."""
    rows = [char_ids(t, limit) for t in texts]
    out = torch.full((len(rows), max([len(r) for r in rows] + [1])), PAD_CHAR, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out
