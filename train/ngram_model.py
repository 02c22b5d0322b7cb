"""BERT for sequence classification with the n-gram head beside it (train/ngram_head.py).

A subclass, so that everything made for BERT keeps working: accelerate's prepare, DDP, DeepSpeed ZeRO, FSDP's
BertLayer wrapping, save_pretrained / from_pretrained (the head's size is in config.json, its weights in the
model's file). Load a saved model with `BertWithNgrams.from_pretrained(dir)`; over characters (the default) it
needs `char_ids=train.ngram_head.char_batch(texts)` beside the tokenizer's output.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import BertForSequenceClassification
from transformers import initialization as hf_init
from transformers.modeling_outputs import SequenceClassifierOutput

from train import ngram_mix
from train.ngram_head import PAD_CHAR, NgramBag


@dataclass
class HeadsOutput(SequenceClassifierOutput):
    """The classifier's output, with each head's own logits (train/ngram_mix.py fits their weights from them)."""

    deep_logits: torch.FloatTensor | None = None
    wide_logits: torch.FloatTensor | None = None


def reads_chars(config) -> bool:
    """Does the head read the text's characters (`char_ids`) rather than the token ids? A saved model from before
    the choice existed has no `ngram_input` and read tokens."""
    return bool(getattr(config, "ngram_buckets", 0)) and getattr(config, "ngram_input", "tokens") == "chars"


class BertWithNgrams(BertForSequenceClassification):
    def __init__(self, config):
        super().__init__(config)
        self.ngrams = NgramBag(config.ngram_buckets, config.ngram_max_n, config.num_labels, config.ngram_skip_ids)

    def _init_weights(self, module):
        if isinstance(module, torch.nn.EmbeddingBag):  # the head's table (transformers calls this per module)
            # transformers' own zeros_: during from_pretrained torch.nn.init is a no-op, and a head missing from
            # the checkpoint (a pretrained BERT) would keep uninitialised memory; this one skips loaded weights.
            hf_init.zeros_(module.weight)
        else:
            super()._init_weights(module)

    def forward(self, input_ids=None, attention_mask=None, labels=None, char_ids=None, **kwargs):
        deep = super().forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs).logits
        if reads_chars(self.config):
            if char_ids is None:  # the head's logits would silently be missing from every prediction
                raise ValueError(
                    "this model's n-gram head reads the text's characters: pass "
                    "char_ids=train.ngram_head.char_batch(texts) beside the tokenizer's output"
                )
            wide = self.ngrams(char_ids, char_ids != PAD_CHAR)
        else:
            wide = self.ngrams(input_ids, torch.ones_like(input_ids) if attention_mask is None else attention_mask)
        deep, wide = deep.float(), wide.float()  # summed in float32 under bf16
        loss = None
        if labels is not None:  # one loss per head (see train/ngram_head.py for why)
            ce = torch.nn.functional.cross_entropy
            loss = ce(deep, labels) + ce(wide, labels)
        a, b = ngram_mix.weights(self.config)  # the heads' weights, fitted after training (train/ngram_mix.py)
        return HeadsOutput(loss=loss, logits=a * deep + b * wide, deep_logits=deep, wide_logits=wide)
