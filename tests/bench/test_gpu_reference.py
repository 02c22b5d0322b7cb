"""bench/gpu_reference.py cannot run without a GPU; its three kit submissions must still plan cleanly."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_three_gpu_plans_are_valid(tmp_path):
    cluster = tmp_path / "one_gpu.yaml"
    cluster.write_text("name: one-gpu\nbackend: ssh\nhosts: [gpu-a]\ngpus_per_node: 1\n")
    result = subprocess.run([sys.executable, str(REPO / "bench" / "gpu_reference.py"), "--dry-run",
                             "--cluster", str(cluster), "--steps", "300"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for flag, kind in (("--use_deepspeed", "DEEPSPEED"), ("--use_fsdp", "FSDP")):
        assert kind in out and flag in out
    # DDP on one GPU is a world of one process: no launcher, accelerate's variables given directly.
    assert "export ACCELERATE_MIXED_PRECISION=bf16" in out and "exec python -m train " in out
    assert out.count("--mixed_precision bf16") == 2 and out.count("--model base --max-steps 300") == 3
