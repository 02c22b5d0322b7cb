"""A small stand-in for `kit`: writes the Accelerate YAML / DeepSpeed JSON kit generates and launches
`python -m train` exactly as kit does (see the launcher contract in train/__init__.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def deepspeed_json(stage: int, offload: bool, clip: float = 1.0) -> dict:
    zero: dict = {"stage": stage}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu"}
        if stage == 3:
            zero["offload_param"] = {"device": "cpu"}
    return {"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto",
            "gradient_accumulation_steps": "auto", "gradient_clipping": clip,
            "zero_optimization": zero, "zero_force_ds_cpu_optimizer": False,
            "bf16": {"enabled": False}, "fp16": {"enabled": False}}


def write_config(tmp: Path, strategy: str, world: int, machines: int = 1, stage: int = 2,
                 offload: bool = True, distributed_type: str | None = None) -> Path:
    lines = ["compute_environment: LOCAL_MACHINE", f"num_machines: {machines}",
             f"num_processes: {world}", "machine_rank: 0", "main_training_function: main"]
    if strategy == "ddp":
        lines += ["mixed_precision: 'no'", f"distributed_type: {distributed_type or 'MULTI_GPU'}", "use_cpu: true"]
    elif strategy == "deepspeed":
        ds = tmp / "deepspeed.json"
        ds.write_text(json.dumps(deepspeed_json(stage, offload), indent=1))
        # No top-level mixed_precision next to a deepspeed_config_file: accelerate rejects it (precision is
        # the JSON's bf16/fp16 sections).
        lines += ["distributed_type: DEEPSPEED", "deepspeed_config:", f"  deepspeed_config_file: {ds}",
                  "  deepspeed_multinode_launcher: standard", f"  zero3_init_flag: {str(stage == 3).lower()}"]
    else:
        raise ValueError(strategy)
    path = tmp / f"accelerate_{strategy}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def launch_argv(config: Path, strategy: str, world: int, machines: int, machine_rank: int, port: int,
                train_args: list[str], threads: int = 1, flags: list[str] | None = None) -> list[str]:
    if flags is None:
        flags = [{"ddp": "--multi_gpu", "deepspeed": "--use_deepspeed", "fsdp": "--use_fsdp"}[strategy]]
    return [PYTHON, "-m", "accelerate.commands.launch", "--config_file", str(config),
            "--num_machines", str(machines), "--machine_rank", str(machine_rank),
            "--main_process_ip", "127.0.0.1", "--main_process_port", str(port), "--num_processes", str(world),
            "--rdzv_backend", "static", "--same_network", *flags, "--num_cpu_threads_per_process", str(threads),
            "-m", "train", *train_args]


def launch_env(strategy: str, world: int, machines: int = 1, extra: dict | None = None,
               expected_strategy: str | None = None) -> dict:
    env = dict(os.environ)
    env.pop("ACCELERATE_USE_CPU", None)
    if strategy == "ddp":
        env["ACCELERATE_USE_CPU"] = "1"  # what forms a real gloo world on CPU (FACTS.md)
    env.update({"KIT_EXPECTED_WORLD_SIZE": str(world), "KIT_EXPECTED_NUM_MACHINES": str(machines),
                "KIT_EXPECTED_STRATEGY": expected_strategy or strategy, "KIT_EXPECTED_MIXED_PRECISION": "no",
                "KIT_EXPECTED_DEVICE": "cpu", "KIT_RUN_ID": "test", "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


def run_job(tmp: Path, strategy: str, train_args: list[str], world: int = 2, machines: int = 1,
            stage: int = 2, extra_env: dict | None = None, timeout: float = 600,
            distributed_type: str | None = None, flags: list[str] | None = None,
            use_cpu_env: bool | None = None) -> subprocess.CompletedProcess:
    """Launch like kit: one launcher per machine (all on this host), wait for all; returns machine 0's result
    with every launcher's output concatenated."""
    config = write_config(tmp, strategy, world, machines, stage, distributed_type=distributed_type)
    port = free_port()
    env = launch_env(strategy, world, machines, extra_env)
    if use_cpu_env is False:
        env.pop("ACCELERATE_USE_CPU", None)
    procs = [subprocess.Popen(launch_argv(config, strategy, world, machines, rank, port, train_args, flags=flags),
                              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(machines)]
    outs, codes = [], []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        outs.append(out)
        codes.append(p.returncode)
    return subprocess.CompletedProcess(procs[0].args, max(codes, key=abs), "\n".join(outs), "")


if __name__ == "__main__":  # manual use: python tests/train/launch.py ddp 2 OUTDIR -- <train args>
    import tempfile

    strategy, world = sys.argv[1], int(sys.argv[2])
    rest = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    with tempfile.TemporaryDirectory() as d:
        cfg = write_config(Path(d), strategy, world)
        argv = launch_argv(cfg, strategy, world, 1, 0, free_port(), rest)
        sys.exit(subprocess.call(argv, cwd=REPO, env=launch_env(strategy, world)))
