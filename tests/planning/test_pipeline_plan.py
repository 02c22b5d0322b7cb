"""The plan of a pipelined job: the stage layout in the dry-run, the world the ranks check, and impossible layouts
refused in one line."""

import pytest

from launcher.errors import KitError
from launcher.render.dryrun import render_text
from tests.launcher.planning import LOCAL_CPU, SSH_GPU, cluster, job, plan


def test_the_dry_run_shows_stages_and_replicas_and_the_ranks_get_them():
    p = plan(job(pipeline_stages=2, gradient_accumulation_steps=4), cluster(LOCAL_CPU), nodes=2,
             procs_per_node=2)
    text = render_text(p)
    assert ("pipeline: 2 stages x 2 replica(s), 4 micro-batches per step; stage 0: ranks 0, 2; stage 1: ranks 1, 3"
            in text)
    assert p.world.pipeline_stages == 2 and p.world.pipeline_microbatches == 4
    for node in p.nodes:
        assert node.env["KIT_EXPECTED_PIPELINE_STAGES"] == "2"
        assert node.env["KIT_EXPECTED_PIPELINE_MICROBATCHES"] == "4"


def test_an_unpipelined_plan_is_unchanged():
    p = plan(job(), cluster(SSH_GPU), nodes=2)
    assert "pipeline:" not in render_text(p) and not any("PIPELINE" in k for k in p.nodes[0].env)


@pytest.mark.parametrize("fields, overrides, message", [
    ({"pipeline_stages": 3}, {"nodes": 2}, "pipeline_stages: 3 stages do not divide the world of 2 processes"),
    ({"pipeline_stages": 2, "strategy": "deepspeed"}, {"nodes": 2}, "runs with strategy ddp"),
    ({"pipeline_stages": 2, "mixed_precision": "bf16"}, {"nodes": 2}, "set mixed_precision: no"),
    ({"pipeline_microbatches": 4}, {}, "pipeline_microbatches: needs pipeline_stages of 2 or more"),
])
def test_impossible_layouts_are_one_line(fields, overrides, message):
    spec = cluster(SSH_GPU) if fields.get("mixed_precision") else cluster(LOCAL_CPU)
    with pytest.raises(KitError, match=message):
        plan(job(**fields), spec, **overrides)
