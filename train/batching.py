"""Datasets, length-bucketed batch sampling and dynamic padding.

Most reviews are far shorter than --max-length, so batches are padded only to their own longest example, and
training batches are drawn from buckets of similar length.  The order of an epoch is a pure function of
(seed, epoch), so a resumed run can skip exactly the batches it has already seen.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from train.ngram_head import PAD_CHAR
from train.tokenizing import Encoded


class EncodedDataset(Dataset):
    """(token ids, label) of each example, and its characters when the n-gram head reads them."""

    def __init__(self, enc: Encoded, chars: bool = False):
        self.enc, self.chars = enc, chars

    def __len__(self) -> int:
        return len(self.enc)

    def __getitem__(self, i: int):
        if self.chars:
            return self.enc.tokens(i), self.enc.labels[i], self.enc.text_chars(i)
        return self.enc.tokens(i), self.enc.labels[i]


def _padded(rows: list[torch.Tensor], pad: int) -> torch.Tensor:
    out = torch.full((len(rows), max(max(len(r) for r in rows), 1)), pad, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


class Collate:
    """Pads a batch to its own longest example (not to --max-length); characters (`char_ids`, when the dataset
    gives them) to the batch's longest text, with ngram_head.PAD_CHAR."""

    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    def __call__(self, items):
        longest = max(len(item[0]) for item in items)
        input_ids = torch.full((len(items), longest), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(items), longest), dtype=torch.long)
        for row, item in enumerate(items):
            input_ids[row, : len(item[0])] = item[0]
            mask[row, : len(item[0])] = 1
        labels = torch.stack([item[1] for item in items])
        batch = {"input_ids": input_ids, "attention_mask": mask, "labels": labels}
        if len(items[0]) > 2:
            batch["char_ids"] = _padded([item[2] for item in items], PAD_CHAR)
        return batch


class BucketBatchSampler(Sampler):
    """Full batches of similar-length examples in a seeded random order; the remainder of an epoch is dropped.

    Pools of `pool_batches` batches are sorted by length and cut into batches, then all batches are shuffled.
    accelerate shards the batches across ranks (batch i goes to rank i % world).
    """

    def __init__(
        self, lengths: torch.Tensor, batch_size: int, seed: int, bucketing: bool = True, pool_batches: int = 64
    ):
        self.lengths = lengths
        self.batch_size = batch_size
        self.drop_last = True  # read by accelerate's BatchSamplerShard
        self.seed = seed
        self.bucketing = bucketing
        self.pool = pool_batches * batch_size
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.lengths) // self.batch_size

    def batches(self, epoch: int) -> list[list[int]]:
        gen = torch.Generator().manual_seed(self.seed * 1000003 + epoch)
        order = torch.randperm(len(self.lengths), generator=gen)
        usable = order[: len(self) * self.batch_size]
        if not len(usable):  # fewer examples than one batch (train/data.py refuses such a split at start)
            return []
        if self.bucketing:
            pools = [usable[i : i + self.pool] for i in range(0, len(usable), self.pool)]
            usable = torch.cat([p[torch.argsort(self.lengths[p], stable=True)] for p in pools])
        batches = usable.view(-1, self.batch_size)
        batches = batches[torch.randperm(len(batches), generator=gen)]
        return batches.tolist()

    def __iter__(self):
        return iter(self.batches(self.epoch))


def train_loader(
    enc: Encoded, batch_size: int, seed: int, pad_id: int, bucketing: bool, chars: bool = False
) -> DataLoader:
    sampler = BucketBatchSampler(enc.lengths(), batch_size, seed, bucketing)
    # A private generator keeps DataLoader from drawing on the global RNG (dropout) at each iter().
    return DataLoader(
        EncodedDataset(enc, chars),
        batch_sampler=sampler,
        collate_fn=Collate(pad_id),
        generator=torch.Generator().manual_seed(seed),
    )


def eval_loader(enc: Encoded, batch_size: int, pad_id: int, chars: bool = False) -> DataLoader:
    # Sorted by length: little padding; order is irrelevant to the metrics.  Plain batch_size so that
    # gather_for_metrics can drop the samples accelerate duplicates to even out the last batch.
    order = torch.argsort(enc.lengths(), stable=True)
    subset = torch.utils.data.Subset(EncodedDataset(enc, chars), order.tolist())
    return DataLoader(subset, batch_size=batch_size, shuffle=False, collate_fn=Collate(pad_id))
