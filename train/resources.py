"""Per-rank resources per logging interval: peak memory, utilisation and samples/s, on CUDA and on CPU alike.

On a GPU: the CUDA allocator's peak (reset every interval) and the GPU's utilisation from NVML (nvidia-ml-py,
imported only when CUDA is there): the mean of NVML's own utilisation samples over the interval. On CPU: the
process's peak resident memory (the kernel's high-water mark VmHWM, reset every interval through
/proc/self/clear_refs where allowed, else the peak since start) and the process's CPU time over the wall time
(100% = one core busy). samples/s is this rank's examples over its time in training steps.
"""

from __future__ import annotations

import re
import time

import torch

_HWM = re.compile(r"^VmHWM:\s+(\d+) kB", re.MULTILINE)
# NVML's nvmlValueType_t -> the field of the sample's value union
_SAMPLE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _peak_rss_mib() -> float | None:
    try:
        with open("/proc/self/status") as f:
            match = _HWM.search(f.read())
    except OSError:
        match = None
    if match:
        return int(match.group(1)) / 1024
    import resource  # not Linux: the peak since start, in KiB

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak_rss() -> bool:
    """Start a new high-water mark (Linux: '5' to clear_refs); False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class _Nvml:
    """NVML utilisation of this process's GPU: the mean of the driver's samples since the last read."""

    def __init__(self, device: torch.device):
        import pynvml  # nvidia-ml-py; only ever imported with CUDA present

        self.nvml = pynvml
        pynvml.nvmlInit()
        index = device.index if device.index is not None else torch.cuda.current_device()
        try:  # by UUID: CUDA's device numbering (CUDA_VISIBLE_DEVICES) is not NVML's
            uuid = str(torch.cuda.get_device_properties(index).uuid)
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
        except Exception:
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.last = 0
        self.read()  # drop what happened before the first interval

    def read(self) -> float | None:
        nvml = self.nvml
        try:
            kind, samples = nvml.nvmlDeviceGetSamples(self.handle, nvml.NVML_GPU_UTILIZATION_SAMPLES, self.last)
            field = _SAMPLE_FIELDS.get(kind, "uiVal")
            fresh = [s for s in samples if s.timeStamp > self.last]
            if fresh:
                self.last = max(s.timeStamp for s in fresh)
                return sum(float(getattr(s.sampleValue, field)) for s in fresh) / len(fresh)
        except nvml.NVMLError:
            pass
        return float(nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)  # the driver's last period only


class Probe:
    """This rank's figures since the last `start()`."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self.nvml = None
        self.nvml_problem = None
        if self.cuda:
            try:
                self.nvml = _Nvml(device)
            except Exception as exc:  # no nvidia-ml-py, or no NVML library: memory is still worth reporting
                self.nvml_problem = f"{type(exc).__name__}: {exc}"
        self.per_interval_memory = True
        self.start()

    @property
    def memory_kind(self) -> str:
        if self.cuda:
            return "CUDA memory allocated (peak per interval)"
        return (
            "resident memory, RSS (peak per interval)"
            if self.per_interval_memory
            else "resident memory, RSS (peak since start)"
        )

    @property
    def utilization_kind(self) -> str:
        if self.cuda:
            return "GPU utilisation from NVML" if self.nvml else f"GPU utilisation unknown ({self.nvml_problem})"
        return "process CPU time over wall time (100% = one core)"

    def start(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self.per_interval_memory = _reset_peak_rss() and self.per_interval_memory

    def read(self) -> tuple[float, float | None]:
        """(peak memory in MiB, utilisation in %) since start()."""
        if self.cuda:
            memory = torch.cuda.max_memory_allocated(self.device) / 2**20
            return memory, (self.nvml.read() if self.nvml else None)
        wall = time.perf_counter() - self.wall
        cpu = 100.0 * (time.process_time() - self.cpu) / wall if wall > 0 else None
        return _peak_rss_mib() or 0.0, cpu


class Tracker:
    """Every rank's figures for one logging interval, gathered to every rank (a collective)."""

    def __init__(self, accelerator):
        self.accelerator = accelerator
        self.probe = Probe(accelerator.device)

    def interval(self, samples: int, train_seconds: float) -> list[dict]:
        memory, util = self.probe.read()
        rate = samples / train_seconds if train_seconds > 0 else 0.0
        mine = torch.tensor(
            [[self.accelerator.process_index, memory, -1.0 if util is None else util, rate, samples, train_seconds]],
            dtype=torch.float64,
            device=self.accelerator.device,
        )
        rows = self.accelerator.gather(mine).cpu().tolist()
        self.probe.start()
        return [
            {
                "rank": int(r),
                "peak_memory_mib": round(m, 1),
                "utilization_pct": None if u < 0 else round(u, 1),
                "samples_per_s": round(s, 2),
                "samples": int(n),
                "train_s": round(t, 3),
            }
            for r, m, u, s, n, t in sorted(rows)
        ]

    def describe(self) -> dict:
        return {
            "device": self.probe.device.type,
            "memory": self.probe.memory_kind,
            "utilization": self.probe.utilization_kind,
        }


def summary(train_log: list[dict]) -> list[dict]:
    """Per rank over the whole run: the peak memory, the mean utilisation, samples over training time."""
    ranks: dict[int, dict] = {}
    for entry in train_log:
        for row in entry.get("ranks") or []:
            r = ranks.setdefault(row["rank"], {"peak": 0.0, "utils": [], "samples": 0, "seconds": 0.0})
            r["peak"] = max(r["peak"], row["peak_memory_mib"])
            if row["utilization_pct"] is not None:
                r["utils"].append(row["utilization_pct"])
            r["samples"] += row["samples"]
            r["seconds"] += row["train_s"]
    return [
        {
            "rank": rank,
            "peak_memory_mib": round(r["peak"], 1),
            "utilization_pct": round(sum(r["utils"]) / len(r["utils"]), 1) if r["utils"] else None,
            "samples_per_s": round(r["samples"] / r["seconds"], 2) if r["seconds"] else None,
        }
        for rank, r in sorted(ranks.items())
    ]


def lines(info: dict, rows: list[dict], span: str = "") -> list[str]:
    """The run's last lines: one per rank (`span`: what the figures cover, when more than fine-tuning)."""
    gpu = info.get("device") == "cuda"
    out = []
    for row in rows:
        util = "unknown" if row["utilization_pct"] is None else f"{row['utilization_pct']:.0f}%"
        out.append(
            f"rank {row['rank']}: peak {'CUDA memory' if gpu else 'RSS'} {row['peak_memory_mib']:.0f} MiB, "
            f"{'GPU (NVML)' if gpu else 'CPU (process)'} {util}, {row['samples_per_s']} samples/s{span}"
        )
    return out
