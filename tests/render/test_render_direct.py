"""A one-process world runs its entrypoint directly: the same command and environment accelerate's simple
launcher would give it (accelerate's own prepare_simple_launcher_cmd_env, run on the accelerate launch words kit
would have used), with no launcher in between; worlds of more processes keep their launcher."""

import os

import pytest

from launcher.render.accelerate import accelerate_config, launch_argv
from launcher.render.text import to_yaml
from launcher.render.direct import is_direct
from tests.launcher.planning import LOCAL_CPU, LOCAL_GPU, SLURM_GPU, cluster, job, plan

pytest.importorskip("accelerate")

CASES = {
    "cpu": (LOCAL_CPU, {}, {}),
    "cpu-threads-at-node": ({**LOCAL_CPU, "cpu_threads_per_process": "auto"}, {}, {}),
    "gpu-bf16": (LOCAL_GPU, {"mixed_precision": "bf16"}, {"gpus": 1}),
    "gpu-dynamo-script": (LOCAL_GPU, {"entrypoint": {"script": "t.py"}, "dynamo_backend": "inductor"}, {"gpus": 1}),
    "slurm-gpu": (SLURM_GPU, {"mixed_precision": "fp16"}, {"gpus": 1}),
}


def _simple_launcher(words, monkeypatch):
    """(command, environment added) as accelerate's simple launcher computes them from these launch words."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_simple_launcher_cmd_env
    for name in [n for n in os.environ if n.startswith(("ACCELERATE_", "OMP_", "CUDA_VISIBLE", "KMP_"))]:
        monkeypatch.delenv(name)
    args, _, _ = _validate_launch_command(launch_command_parser().parse_args(words))
    assert not (args.multi_gpu or args.use_deepspeed or args.use_fsdp)   # accelerate's simple launcher path
    before = dict(os.environ)
    cmd, env = prepare_simple_launcher_cmd_env(args)
    return cmd, {k: v for k, v in env.items() if before.get(k) != v}


@pytest.mark.parametrize("case", list(CASES))
def test_one_process_runs_what_the_simple_launcher_would(case, tmp_path, monkeypatch):
    from accelerate.utils import str_to_bool
    base, fields, overrides = CASES[case]
    p = plan(job(**fields), cluster(base), **overrides)
    (node,) = p.nodes
    assert p.world.world_size == 1
    # The words and config `accelerate launch` would have had, from the same settings.
    monkeypatch.chdir(tmp_path)
    settings = _settings(p, node, job(**fields), cluster(base), overrides)
    (tmp_path / settings.config_file).write_text(to_yaml(accelerate_config(settings, None)))
    cmd, env = _simple_launcher(list(launch_argv(settings)[3:]), monkeypatch)
    assert list(node.argv) == [node.argv[0], *cmd[1:]]          # python [-m] entrypoint args, nothing between
    assert len(env) >= 6
    for name, value in env.items():
        if name == "ACCELERATE_USE_CPU":
            assert str_to_bool(node.env[name]) == str_to_bool(value)
        elif name == "OMP_NUM_THREADS" and "OMP_NUM_THREADS" not in node.env:
            assert "export OMP_NUM_THREADS=" in node.command   # sized on the node at start
        else:
            assert node.env.get(name) == value, name
    assert not any("accelerate.node" in f for f in node.files)


def _settings(p, node, job_spec, cluster_spec, overrides):
    """The planner's launch settings for this one-process node, as its accelerate launch would have used them."""
    from launcher.planning.build import _settings as planned
    from launcher.backends import registry
    from launcher.planning.shape import resolve_shape
    from launcher.spec.overrides import Overrides, apply_overrides
    j, c = apply_overrides(job_spec, cluster_spec, Overrides(**overrides))
    placed = registry.placement(c.backend).place(j, c, {})
    return planned(j, resolve_shape(j, placed.cluster, placed.hosts), node.argv[0], "accelerate.yaml", "0", p.world.master_addr,
                   p.world.master_port, p.run_dir, node.env.get("CUDA_VISIBLE_DEVICES"))


@pytest.mark.parametrize("fields,overrides", [({}, {"nodes": 2}), ({}, {"procs_per_node": 2}),
                                              ({"strategy": "deepspeed"}, {}), ({"launcher": "torchrun"}, {})])
def test_worlds_that_need_a_launcher_keep_it(fields, overrides):
    p = plan(job(**fields), cluster(LOCAL_CPU), **overrides)
    assert p.nodes[0].argv[1:3] in (("-m", "accelerate.commands.launch"), ("-m", "torch.distributed.run"))


def test_direct_only_for_one_process_without_a_strategy():
    assert is_direct("NO", 1)
    assert not is_direct("DEEPSPEED", 1) and not is_direct("FSDP", 1) and not is_direct("MULTI_GPU", 2)
