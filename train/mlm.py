"""Masked-language-model pieces of the pretrain phase: BERT with its MLM head, and deterministically masked data.

The head runs only where a token is masked (15% of them): over all positions its vocabulary-sized output would
cost about as much as the encoder of the tiny model.  Masks are a pure function of (seed, epoch, example), so every
rank, every run and a resumed run mask the same tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from train.batching import BucketBatchSampler
from train.tokenizing import Encoded

IGNORE = -100  # label of a token that is not predicted


class MaskedLM(torch.nn.Module):
    """BertForMaskedLM's encoder and head; `encoder_state()` is what the classifier takes over."""

    def __init__(self, config):
        from transformers import BertForMaskedLM

        super().__init__()
        self.mlm = BertForMaskedLM(config)  # ties the output embedding to the input one, as BERT does
        self.config = self.mlm.config

    def forward(self, input_ids, attention_mask, labels=None):
        """With labels: the loss and the logits of the masked positions only (in row order); without: every
        position's logits."""
        from transformers.modeling_outputs import MaskedLMOutput

        hidden = self.mlm.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        if labels is None:
            return MaskedLMOutput(logits=self.mlm.cls(hidden))
        picked = labels != IGNORE
        logits = self.mlm.cls(hidden[picked])
        return MaskedLMOutput(loss=F.cross_entropy(logits.float(), labels[picked]), logits=logits)

    def encoder_state(self) -> dict:
        return self.mlm.bert.state_dict()


class MaskedDataset(Dataset):
    """Each example with BERT's masking: `prob` of its non-special tokens are predicted (at least one); of those
    80% become [MASK], 10% a random token, 10% stay.  `epoch` picks a fresh draw (fixed for evaluation)."""

    def __init__(self, enc: Encoded, tokenizer, prob: float, seed: int, fixed: bool = False):
        self.enc, self.prob, self.seed, self.fixed = enc, prob, seed, fixed
        self.mask_id, self.vocab = tokenizer.mask_token_id, len(tokenizer)
        self.special = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        self.first_word = int(self.special.max()) + 1  # random replacements are never special tokens
        self.epoch = -1 if fixed else 0

    def set_epoch(self, epoch: int) -> None:  # accelerate's DataLoaderShard.set_epoch calls it
        if not self.fixed:
            self.epoch = epoch

    def __len__(self) -> int:
        return len(self.enc)

    def __getitem__(self, i: int):
        ids = self.enc.tokens(i).long()
        gen = torch.Generator().manual_seed(((self.seed * 1_000_003 + self.epoch + 2) * 1_000_003 + i) % 2**62)
        maskable = ~torch.isin(ids, self.special)
        picked = (torch.rand(len(ids), generator=gen) < self.prob) & maskable
        if not picked.any() and maskable.any():  # every example teaches something (and no batch is empty)
            candidates = maskable.nonzero().flatten()
            picked[candidates[torch.randint(len(candidates), (1,), generator=gen)]] = True
        labels = torch.where(picked, ids, torch.full_like(ids, IGNORE))
        how = torch.rand(len(ids), generator=gen)
        inputs = ids.clone()
        inputs[picked & (how < 0.8)] = self.mask_id
        swap = picked & (how >= 0.8) & (how < 0.9)
        inputs[swap] = torch.randint(self.first_word, self.vocab, (int(swap.sum()),), generator=gen)
        return inputs, labels


class MaskedCollate:
    """Pads inputs with [PAD] and labels with IGNORE to the batch's longest example."""

    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    def __call__(self, items):
        longest = max(len(ids) for ids, _ in items)
        input_ids = torch.full((len(items), longest), self.pad_id, dtype=torch.long)
        labels = torch.full((len(items), longest), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(items), longest), dtype=torch.long)
        for row, (ids, lab) in enumerate(items):
            input_ids[row, : len(ids)], labels[row, : len(ids)], mask[row, : len(ids)] = ids, lab, 1
        return {"input_ids": input_ids, "attention_mask": mask, "labels": labels}


def train_loader(enc: Encoded, tokenizer, batch_size: int, seed: int, prob: float, bucketing: bool) -> DataLoader:
    sampler = BucketBatchSampler(enc.lengths(), batch_size, seed, bucketing)
    return DataLoader(
        MaskedDataset(enc, tokenizer, prob, seed),
        batch_sampler=sampler,
        collate_fn=MaskedCollate(tokenizer.pad_token_id),
        generator=torch.Generator().manual_seed(seed),
    )


def eval_loader(enc: Encoded, tokenizer, batch_size: int, seed: int, prob: float) -> DataLoader:
    order = torch.argsort(enc.lengths(), stable=True)  # little padding; the masks do not depend on the order
    subset = torch.utils.data.Subset(MaskedDataset(enc, tokenizer, prob, seed, fixed=True), order.tolist())
    return DataLoader(subset, batch_size=batch_size, shuffle=False, collate_fn=MaskedCollate(tokenizer.pad_token_id))


def per_example(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss sum, correct predictions and predicted tokens of each example (rows of `labels`)."""
    picked = labels != IGNORE
    row = picked.nonzero()[:, 0]
    target = labels[picked]
    loss = F.cross_entropy(logits.float(), target, reduction="none")
    n = labels.shape[0]
    zeros = torch.zeros(n, dtype=torch.float64, device=labels.device)
    return (
        zeros.index_add(0, row, loss.double()),
        zeros.index_add(0, row, (logits.argmax(-1) == target).double()),
        zeros.index_add(0, row, torch.ones_like(loss, dtype=torch.float64)),
    )
