"""Generated accelerate YAML and launch argv, checked by accelerate's own config loader and launch parser."""

import pytest
import yaml
from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
from accelerate.commands.launch import launch_command_parser
from accelerate.utils import DistributedType

from launcher.cli import main
from tests.launcher.planning import (LOCAL_CPU, LOCAL_GPU, PYTHON, SLURM_GPU, SSH_GPU, cluster, job, launch_args, plan,
                      resolve_runtime)

SLURM_HEAD = "10.9.9.9"
FLAGS = {"MULTI_GPU": "multi_gpu", "DEEPSPEED": "use_deepspeed", "FSDP": "use_fsdp"}

# id: (cluster base, job fields, overrides, expected distributed_type, expected master address, device)
CASES = {
    "local-cpu-1node-2procs-ddp": (LOCAL_CPU, {"procs_per_node": 2}, {}, "MULTI_GPU", "127.0.0.1", "cpu"),
    "local-cpu-2nodes-ddp": (LOCAL_CPU, {}, {"nodes": 2}, "MULTI_GPU", "127.0.0.1", "cpu"),
    "local-cpu-2nodes-2procs-bf16": (LOCAL_CPU, {"mixed_precision": "bf16"}, {"nodes": 2, "procs_per_node": 2},
                                     "MULTI_GPU", "127.0.0.1", "cpu"),
    "local-cpu-2nodes-deepspeed": (LOCAL_CPU, {"strategy": "deepspeed"}, {"nodes": 2}, "DEEPSPEED", "127.0.0.1",
                                   "cpu"),
    "local-gpu-2nodes-fsdp": (LOCAL_GPU, {"strategy": "fsdp"}, {"nodes": 2, "gpus": 2}, "FSDP", "127.0.0.1",
                              "cuda"),
    "ssh-ddp": (SSH_GPU, {"mixed_precision": "bf16"}, {"nodes": 2}, "MULTI_GPU", "10.0.0.11", "cuda"),
    "ssh-deepspeed": (SSH_GPU, {"strategy": "deepspeed", "mixed_precision": "fp16"}, {"nodes": 2}, "DEEPSPEED",
                      "10.0.0.11", "cuda"),
    "ssh-fsdp": (SSH_GPU, {"strategy": "fsdp", "fsdp": {"version": 1, "sharding": "SHARD_GRAD_OP"}}, {"nodes": 2},
                 "FSDP", "10.0.0.11", "cuda"),
    "slurm-ddp": (SLURM_GPU, {}, {"nodes": 2}, "MULTI_GPU", SLURM_HEAD, "cuda"),
    "slurm-deepspeed": (SLURM_GPU, {"strategy": "deepspeed", "deepspeed": {"zero_stage": 3}},
                        {"nodes": 3, "mixed_precision": "bf16"}, "DEEPSPEED", SLURM_HEAD, "cuda"),
    "slurm-fsdp": (SLURM_GPU, {"strategy": "fsdp"}, {"nodes": 2}, "FSDP", SLURM_HEAD, "cuda"),
}


def _plan(case):
    base, fields, overrides, *_ = CASES[case]
    return plan(job(**fields), cluster(base), **overrides)


def _parsed(p, node):
    words = resolve_runtime(launch_args(node), {"SLURM_NODEID": str(node.machine_rank), "KIT_MASTER_ADDR": SLURM_HEAD})
    return launch_command_parser().parse_args(words)


def _loaded(p, path, tmp_path):
    out = tmp_path / path.replace("/", "_")
    out.write_text(p.files[path], encoding="utf-8")
    return ClusterConfig.from_yaml_file(str(out))


@pytest.fixture(scope="module")
def parser():
    return launch_command_parser()


@pytest.mark.parametrize("case", CASES)
def test_argv_parses_with_accelerate_launch_parser(case):
    p = _plan(case)
    _, _, _, dist, master, _ = CASES[case]
    assert len(p.nodes) == p.world.num_machines
    for node in p.nodes:
        assert node.argv[0] == PYTHON
        ns = _parsed(p, node)
        assert ns.num_machines == p.world.num_machines
        assert ns.machine_rank == node.machine_rank
        assert ns.main_process_ip == master
        assert ns.main_process_port == p.world.master_port
        assert ns.num_processes == p.world.world_size == p.world.num_machines * p.world.procs_per_node
        assert ns.rdzv_backend == "static"
        assert ns.same_network is True
        assert ns.mixed_precision == p.world.mixed_precision
        assert {f for f in ("multi_gpu", "use_deepspeed", "use_fsdp", "cpu") if getattr(ns, f)} == {FLAGS[dist]}
        assert ns.config_file in node.files and ns.config_file.endswith(".yaml")
        assert ns.module is True and ns.training_script == "train"
        assert ns.training_script_args == ["--epochs", "1"]


@pytest.mark.parametrize("case", CASES)
def test_yaml_loads_with_accelerate_and_agrees_with_argv(case, tmp_path):
    p = _plan(case)
    _, _, _, dist, _, device = CASES[case]
    for node in p.nodes:
        ns = _parsed(p, node)
        cfg = _loaded(p, ns.config_file, tmp_path)
        assert cfg.distributed_type == DistributedType(dist) != DistributedType.MULTI_CPU
        assert cfg.num_processes == ns.num_processes == sum(p.world.procs_per_node for _ in p.nodes)
        assert cfg.num_machines == ns.num_machines
        # SLURM nodes share one file; the rank comes from $SLURM_NODEID on the command line.
        assert cfg.machine_rank == (0 if p.backend == "slurm" else node.machine_rank)
        assert cfg.main_process_port == ns.main_process_port
        assert cfg.main_process_ip == (None if p.backend == "slurm" else ns.main_process_ip)
        assert cfg.mixed_precision == ns.mixed_precision
        assert cfg.use_cpu is (device == "cpu")
        assert cfg.rdzv_backend == "static" and cfg.same_network is True
        assert bool(cfg.deepspeed_config) is (dist == "DEEPSPEED")
        assert bool(cfg.fsdp_config) is (dist == "FSDP")


@pytest.mark.parametrize("case", CASES)
def test_load_config_from_file_picks_cluster_config(case, tmp_path):
    p = _plan(case)
    path = p.nodes[-1].argv[p.nodes[-1].argv.index("--config_file") + 1]
    out = tmp_path / "accelerate.yaml"
    out.write_text(p.files[path], encoding="utf-8")
    assert isinstance(load_config_from_file(str(out)), ClusterConfig)


def test_each_local_node_has_its_own_yaml_with_its_rank(tmp_path):
    p = _plan("local-cpu-2nodes-ddp")
    paths = [_parsed(p, n).config_file for n in p.nodes]
    assert len(set(paths)) == 2
    assert [_loaded(p, path, tmp_path).machine_rank for path in paths] == [0, 1]


def test_slurm_rank_and_head_are_runtime_words():
    p = _plan("slurm-ddp")
    for node in p.nodes:
        args = launch_args(node)
        assert args[args.index("--machine_rank") + 1] == "${SLURM_NODEID}"
        assert args[args.index("--main_process_ip") + 1] == "${KIT_MASTER_ADDR}"
    assert p.runtime_vars == ("SLURM_NODEID", "KIT_MASTER_ADDR")


def test_world_of_one_is_not_distributed():
    """No launcher and no accelerate config: the process runs alone, as accelerate's simple launcher would run it
    (tests/render/test_render_direct.py compares the two)."""
    p = plan(job(), cluster(LOCAL_CPU))
    assert p.nodes[0].argv[1:3] == ("-m", "train") and not p.files
    assert "--multi_gpu" not in p.nodes[0].argv and "--cpu" not in p.nodes[0].argv


def test_cpu_ddp_is_multi_gpu_with_cpu_switch_never_multi_cpu():
    p = _plan("local-cpu-2nodes-ddp")
    for node in p.nodes:
        assert "--cpu" not in node.argv and "--multi_gpu" in node.argv
        assert node.env["ACCELERATE_USE_CPU"] == "1"
    assert all("MULTI_CPU" not in text for text in p.files.values())


def test_script_entrypoint(parser):
    p = plan(job(entrypoint={"script": "scripts/train.py"}, args=["--lr", "1e-4"]), cluster(SSH_GPU), nodes=2)
    ns = parser.parse_args(launch_args(p.nodes[1]))
    assert not ns.module
    assert ns.training_script == "scripts/train.py"
    assert ns.training_script_args == ["--lr", "1e-4"]


def test_deepspeed_section_names_the_generated_json(tmp_path):
    p = _plan("ssh-deepspeed")
    cfg = _loaded(p, _parsed(p, p.nodes[0]).config_file, tmp_path)
    ds_path = cfg.deepspeed_config["deepspeed_config_file"]
    assert ds_path in p.files and all(ds_path in n.files for n in p.nodes)
    assert cfg.deepspeed_config["deepspeed_multinode_launcher"] == "standard"


def test_fsdp_section_keys_match_version(tmp_path):
    v2 = _loaded(p := _plan("slurm-fsdp"), _parsed(p, p.nodes[0]).config_file, tmp_path).fsdp_config
    assert v2["fsdp_version"] == 2 and v2["fsdp_reshard_after_forward"] is True
    v1 = _loaded(p := _plan("ssh-fsdp"), _parsed(p, p.nodes[0]).config_file, tmp_path).fsdp_config
    assert v1["fsdp_version"] == 1 and v1["fsdp_reshard_after_forward"] == "SHARD_GRAD_OP"


# --- accelerate's loader accepts nonsense that kit refuses --------------------------------------------------

GOOD_YAML = {
    "compute_environment": "LOCAL_MACHINE", "distributed_type": "DEEPSPEED", "mixed_precision": "bf16",
    "num_machines": 2, "num_processes": 16, "machine_rank": 0,
}

ACCELERATE_ACCEPTS = {
    "unknown-deepspeed-key": {"deepspeed_config": {"zero_stage": 2, "zero_stage_typo": 3}},
    "unknown-fsdp-key": {"distributed_type": "FSDP", "fsdp_config": {"fsdp_version": 2, "fsdp_sharding": "x"}},
    "zero-stage-7": {"deepspeed_config": {"zero_stage": 7}},
    "mixed-precision-bf32": {"mixed_precision": "bf32"},
    "num-processes-sixteen": {"num_processes": "sixteen"},
}


@pytest.mark.parametrize("case", ACCELERATE_ACCEPTS)
def test_accelerate_loader_accepts_bad_values(case, tmp_path):
    path = tmp_path / "accelerate.yaml"
    path.write_text(yaml.safe_dump({**GOOD_YAML, **ACCELERATE_ACCEPTS[case]}), encoding="utf-8")
    ClusterConfig.from_yaml_file(str(path))  # the gap: no error


def test_accelerate_loader_rejects_unknown_top_level_key(tmp_path):
    path = tmp_path / "accelerate.yaml"
    path.write_text(yaml.safe_dump({**GOOD_YAML, "num_proceses": 16}), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown keys"):
        ClusterConfig.from_yaml_file(str(path))


KIT_JOB = "name: t\nentrypoint: {module: train}\n"
KIT_REJECTS = {
    "unknown-deepspeed-key": ("strategy: deepspeed\ndeepspeed: {zero_stage: 2, zero_stage_typo: 3}\n", "",
                              "deepspeed.zero_stage_typo"),
    "unknown-fsdp-key": ("strategy: fsdp\nfsdp: {version: 2, fsdp_sharding: x}\n", "", "fsdp.fsdp_sharding"),
    "zero-stage-7": ("strategy: deepspeed\ndeepspeed: {zero_stage: 7}\n", "", "deepspeed.zero_stage"),
    "mixed-precision-bf32": ("mixed_precision: bf32\n", "", "mixed_precision"),
    "num-processes-sixteen": ("", "procs_per_node: sixteen\n", "procs_per_node"),
}


@pytest.mark.parametrize("case", KIT_REJECTS)
def test_kit_rejects_the_equivalent_input(case, tmp_path, capsys):
    job_extra, cluster_extra, field = KIT_REJECTS[case]
    (tmp_path / "job.yaml").write_text(KIT_JOB + job_extra, encoding="utf-8")
    (tmp_path / "cluster.yaml").write_text("name: c\nbackend: local\ngpus_per_node: 2\n" + cluster_extra,
                                           encoding="utf-8")
    code = main(["submit", str(tmp_path / "job.yaml"), "--cluster", str(tmp_path / "cluster.yaml"),
                 "--run-id", "r", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.startswith("kit: error: ") and err.count("\n") == 1
    assert field in err
