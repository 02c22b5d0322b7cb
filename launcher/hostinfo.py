"""Facts about this machine that the CLI feeds into the plan as inputs (the plan itself reads nothing)."""

import os

NVIDIA_GPUS = "/proc/driver/nvidia/gpus"


def local_gpu_count() -> int:
    """GPUs the NVIDIA driver exposes, without importing torch (the CLI stays fast)."""
    try:
        return len(os.listdir(NVIDIA_GPUS))
    except OSError:
        return 0


def local_cpu_count() -> int:
    """Cores this process may run on (its affinity: taskset, cgroup cpusets), not every core of the machine."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
