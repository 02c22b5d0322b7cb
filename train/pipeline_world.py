"""A pipeline run's world: each rank's stage and replica from the world's shape, checked against the plan on every
rank, and the process groups of each replica's pipeline and each stage's replicas."""

from __future__ import annotations

import os

import torch.distributed as dist

from train import EXIT_WORLD_CHECK
from train.pipeline import Fail, LayoutError, describe, layer_split, layout, say


def check_world(run, num_layers: int) -> None:
    expected = os.environ.get("KIT_EXPECTED_WORLD_SIZE")
    try:
        run.layout = layout(run.world, run.stages, run.rank)
        splits = layer_split(num_layers, run.stages)
    except LayoutError as exc:
        raise Fail(EXIT_WORLD_CHECK, f"world check failed: {exc}") from None
    run.layers = splits[run.layout.stage]
    mine = (run.rank, run.layout.stage, run.layout.replica, describe(run.layout.stage, run.stages, run.layers))
    everyone = [None] * run.world
    dist.all_gather_object(everyone, mine)
    seen = {(s, r) for _, s, r, _ in everyone}
    problems = []
    if expected is not None and int(expected) != run.world:
        problems.append(f"world size {run.world}, planned {expected}")
    if len(seen) != run.world:
        problems.append("two ranks claim one stage of one replica")
    if problems:
        raise Fail(EXIT_WORLD_CHECK, f"world check failed: {'; '.join(problems)}")
    say(
        f"pipeline: rank {run.rank} is stage {run.layout.stage}/{run.stages} of replica "
        f"{run.layout.replica}/{run.layout.replicas}: {mine[3]}"
    )
    if run.rank == 0:
        stages = "; ".join(
            f"stage {s}: ranks {','.join(str(r) for r, st, _, _ in everyone if st == s)} "
            f"({next(d for _, st, _, d in everyone if st == s)})"
            for s in range(run.stages)
        )
        say(
            f"world check: {run.world} processes = {run.stages} pipeline stage(s) x {run.layout.replicas} "
            f"replica(s), {run.microbatches} micro-batches per step; {stages}"
        )
    run.pipe_group = _groups([run.layout.pipeline_ranks(r) for r in range(run.layout.replicas)], run.layout.replica)
    run.stage_group = _groups([run.layout.stage_ranks(s) for s in range(run.stages)], run.layout.stage)


def _groups(members: list[list[int]], mine: int):
    """Every rank creates every group, in the same order (new_group is collective)."""
    groups = [dist.new_group(ranks) for ranks in members]
    return groups[mine]
