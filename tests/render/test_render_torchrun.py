"""`launcher: torchrun`: each node's torchrun world equals the one `accelerate launch` would start (torch's own
parser reads kit's argv; accelerate's own launcher code computes its world), and each rank gets exactly the
settings accelerate's launcher would put in its environment (accelerate's prepare_multi_gpu_env /
prepare_deepspeed_cmd_env run on kit's accelerate plan of the same job)."""

import os

import pytest

from tests.launcher.planning import LOCAL_CPU, LOCAL_GPU, SLURM_GPU, SSH_GPU, cluster, job, launch_args, plan, \
    resolve_runtime

pytest.importorskip("accelerate")

CASES = {
    "ddp-cpu": (LOCAL_CPU, {}, {"nodes": 2}),
    "ddp-cpu-threads": ({**LOCAL_CPU, "cpu_threads_per_process": 3}, {}, {"nodes": 2, "procs_per_node": 2}),
    "ddp-gpu-bf16": (SSH_GPU, {"mixed_precision": "bf16"}, {"nodes": 2}),
    "ddp-gpu-dynamo": (SSH_GPU, {"mixed_precision": "fp16", "dynamo_backend": "inductor"}, {"nodes": 2}),
    "ddp-local-gpu-slices": (LOCAL_GPU, {}, {"nodes": 2, "gpus": 4}),
    "zero2-cpu": (LOCAL_CPU, {"strategy": "deepspeed"}, {"nodes": 2}),
    "zero3-offload": (SSH_GPU, {"strategy": "deepspeed", "mixed_precision": "bf16",
                                "deepspeed": {"zero_stage": 3, "offload_param": "cpu", "offload_optimizer": "cpu",
                                              "zero3_init": True}}, {"nodes": 2}),
    "fsdp2": (SLURM_GPU, {"strategy": "fsdp", "fsdp": {"transformer_layer_cls": "BertLayer"}}, {"nodes": 2}),
    "fsdp1-options": (SSH_GPU, {"strategy": "fsdp", "mixed_precision": "bf16",
                                "fsdp": {"version": 1, "sharding": "SHARD_GRAD_OP", "cpu_offload": True,
                                         "activation_checkpointing": True, "auto_wrap_policy": "SIZE_BASED_WRAP",
                                         "min_num_params": 1000, "state_dict_type": "SHARDED_STATE_DICT"}},
                      {"nodes": 2}),
}
RUNTIME = {"SLURM_NODEID": "1", "KIT_MASTER_ADDR": "10.1.2.3"}


def _accelerate(node, files, tmp_path, monkeypatch):
    """(torchrun's world as accelerate's launcher sets it, the environment it gives the ranks), computed by
    accelerate's own code from kit's accelerate argv and files."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env
    for path, content in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(content)
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith(("ACCELERATE_", "FSDP_", "OMP_", "CUDA_VISIBLE"))]:
        monkeypatch.delenv(name)
    args = launch_command_parser().parse_args(resolve_runtime(launch_args(node), RUNTIME))
    args, defaults, from_config = _validate_launch_command(args)
    before = dict(os.environ)
    if args.use_deepspeed:
        fields = list(defaults.deepspeed_config) + (["mixed_precision"] if from_config else [])
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        _, env = prepare_deepspeed_cmd_env(args)
    else:
        env = prepare_multi_gpu_env(args)
    world = {k: str(getattr(args, k)) for k in ("nnodes", "node_rank", "nproc_per_node", "master_addr",
                                                 "master_port")}
    return world, {k: v for k, v in env.items() if before.get(k) != v and k != "PYTHONPATH"}


@pytest.mark.parametrize("case", list(CASES))
def test_torchrun_gives_each_rank_what_accelerate_launch_would(case, tmp_path, monkeypatch):
    from torch.distributed.run import get_args_parser
    base, job_fields, overrides = CASES[case]
    spec = cluster(base)
    via_accelerate = plan(job(**job_fields), spec, **overrides)
    via_torchrun = plan(job(launcher="torchrun", **job_fields), spec, **overrides)
    for acc_node, tr_node in zip(via_accelerate.nodes, via_torchrun.nodes):
        world, env = _accelerate(acc_node, via_accelerate.files, tmp_path, monkeypatch)
        parsed = get_args_parser().parse_args(resolve_runtime(list(tr_node.argv[3:]), RUNTIME))
        assert {k: str(getattr(parsed, k)) for k in world} == world
        assert (parsed.module, parsed.training_script, parsed.training_script_args) == (True, "train",
                                                                                        ["--epochs", "1"])
        rank_word = "${SLURM_NODEID}" if "${SLURM_NODEID}" in tr_node.argv else str(tr_node.machine_rank)
        assert parsed.tee == "3" and parsed.log_dir == f"runs/test-run/node{rank_word}.ranks"
        assert len(env) >= 5   # the comparison below is never vacuous
        # Every variable accelerate's launcher sets, kit sets alike (OMP_NUM_THREADS too, where it is fixed).
        assert {k: tr_node.env.get(k) for k in env} == env
        # Nothing beyond it, but what kit gives both launchers' ranks.
        extra = {k for k in tr_node.env if k.startswith(("ACCELERATE_", "FSDP_")) and k not in env}
        assert extra <= set(acc_node.env), extra
        # No accelerate config file: torchrun reads none.
        assert not any("accelerate.node" in f for f in tr_node.files)
