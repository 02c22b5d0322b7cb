"""BERT for sequence classification with the n-gram head beside it (train/ngram_head.py).

A subclass, so that everything made for BERT keeps working: accelerate's prepare, DDP, DeepSpeed ZeRO, FSDP's
BertLayer wrapping, save_pretrained / from_pretrained (the head's size is in config.json, its weights in the
model's file). Load a saved model with `BertWithNgrams.from_pretrained(dir)`.
"""

from __future__ import annotations

import torch
from transformers import BertForSequenceClassification
from transformers import initialization as hf_init
from transformers.modeling_outputs import SequenceClassifierOutput

from train.ngram_head import NgramBag


class BertWithNgrams(BertForSequenceClassification):
    def __init__(self, config):
        super().__init__(config)
        self.ngrams = NgramBag(config.ngram_buckets, config.ngram_max_n, config.num_labels, config.ngram_skip_ids)

    def _init_weights(self, module):
        if isinstance(module, torch.nn.EmbeddingBag):   # the head's table (transformers calls this per module)
            # transformers' own zeros_: during from_pretrained torch.nn.init is a no-op, and a head missing from
            # the checkpoint (a pretrained BERT) would keep uninitialised memory; this one skips loaded weights.
            hf_init.zeros_(module.weight)
        else:
            super()._init_weights(module)

    def forward(self, input_ids=None, attention_mask=None, labels=None, **kwargs):
        deep = super().forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs).logits
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        deep, wide = deep.float(), self.ngrams(input_ids, attention_mask).float()   # summed in float32 under bf16
        loss = None
        if labels is not None:   # one loss per head (see train/ngram_head.py for why)
            ce = torch.nn.functional.cross_entropy
            loss = ce(deep, labels) + ce(wide, labels)
        return SequenceClassifierOutput(loss=loss, logits=deep + wide)
