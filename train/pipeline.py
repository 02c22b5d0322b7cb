"""Pipeline parallelism for the reference BERT classifier (kit job `pipeline_stages: N`): the layout of stages and
replicas over the world, and the model cut into stage modules for torch.distributed.pipelining.

Rank r is stage r % N of replica r // N, so one replica's stages are consecutive ranks (on one node when a node
holds a whole pipeline) and the replicas of a stage average their gradients (data parallelism across replicas).
Stage 0 holds the embeddings, the last stage the pooler and the classifier; the encoder layers are split evenly,
later stages taking the remainder (stage 0's embeddings are its extra work)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Layout:
    stages: int
    replicas: int
    rank: int

    @property
    def stage(self) -> int:
        return self.rank % self.stages

    @property
    def replica(self) -> int:
        return self.rank // self.stages

    @property
    def first(self) -> bool:
        return self.stage == 0

    @property
    def last(self) -> bool:
        return self.stage == self.stages - 1

    def pipeline_ranks(self, replica: int) -> list[int]:
        return [replica * self.stages + s for s in range(self.stages)]

    def stage_ranks(self, stage: int) -> list[int]:
        return [r * self.stages + stage for r in range(self.replicas)]


class LayoutError(ValueError):
    pass


def layout(world_size: int, stages: int, rank: int) -> Layout:
    if stages < 1 or world_size % stages:
        raise LayoutError(f"{stages} pipeline stages do not divide the world of {world_size} processes")
    return Layout(stages, world_size // stages, rank)


def layer_split(num_layers: int, stages: int) -> list[tuple[int, int]]:
    """[start, end) of the encoder layers of each stage; every stage gets at least one."""
    if num_layers < stages:
        raise LayoutError(f"{stages} pipeline stages need at least {stages} encoder layers; the model has {num_layers}")
    base, extra = divmod(num_layers, stages)
    sizes = [base + (1 if s >= stages - extra else 0) for s in range(stages)]
    starts = [sum(sizes[:s]) for s in range(stages)]
    return [(a, a + n) for a, n in zip(starts, sizes)]


def describe(stage: int, stages: int, layers: tuple[int, int]) -> str:
    parts = ["embeddings"] if stage == 0 else []
    parts.append(f"layers {layers[0]}-{layers[1] - 1}")
    if stage == stages - 1:
        parts.append("classifier")
    return ", ".join(parts)


def _extended(mask: torch.Tensor, dtype) -> torch.Tensor:
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def _run_layers(layers, hidden, mask):
    ext = _extended(mask, hidden.dtype)
    for layer in layers:
        out = layer(hidden, attention_mask=ext)
        hidden = out[0] if isinstance(out, tuple) else out
    return hidden


class StageModule(torch.nn.Module):
    """One stage of BertForSequenceClassification. In: (input_ids, mask) on stage 0, (hidden, mask) after it.
    Out: (hidden, mask) to the next stage, the logits on the last."""

    def __init__(self, model, stage: int, stages: int, layers: tuple[int, int]):
        super().__init__()
        self.first, self.last = stage == 0, stage == stages - 1
        self.embeddings = model.bert.embeddings if self.first else None
        self.layers = torch.nn.ModuleList(model.bert.encoder.layer[layers[0] : layers[1]])
        if self.last:
            self.pooler, self.dropout, self.classifier = model.bert.pooler, model.dropout, model.classifier

    def forward(self, x, mask):
        hidden = self.embeddings(input_ids=x) if self.first else x
        hidden = _run_layers(self.layers, hidden, mask)
        if not self.last:
            return hidden, mask
        return self.classifier(self.dropout(self.pooler(hidden)))


def say(text: str) -> None:
    """A pipeline rank's line on stdout (every rank may say one; the console tags it)."""
    print(text, flush=True)


class Fail(Exception):
    """A pipeline rank stops with this exit code and (on the rank that knows why) this message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


__all__ = ["Fail", "say", "Layout", "LayoutError", "layout", "layer_split", "describe", "StageModule"]
