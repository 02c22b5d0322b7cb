"""Facts about this machine that the CLI feeds into the plan as inputs (the plan itself reads nothing)."""

import os

NVIDIA_GPUS = "/proc/driver/nvidia/gpus"


def local_gpu_count() -> int:
    """GPUs the NVIDIA driver exposes, without importing torch (the CLI stays fast)."""
    try:
        return len(os.listdir(NVIDIA_GPUS))
    except OSError:
        return 0
