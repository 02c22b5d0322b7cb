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


def visible_gpu_ids(environ, driver_count: int) -> tuple[str, ...]:
    """The GPU ids this process may use: CUDA_VISIBLE_DEVICES if set (by the user or a scheduler), else every GPU
    of the driver. Like CUDA, an index outside the driver's range ends the list; with no driver there are none."""
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    if driver_count == 0:
        return ()
    if raw is None:
        return tuple(str(i) for i in range(driver_count))
    ids = []
    for word in (w.strip() for w in raw.split(",")):
        if not word or (word.lstrip("-").isdigit() and not 0 <= int(word) < driver_count):
            break
        ids.append(word)
    return tuple(ids)
