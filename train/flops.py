"""Model FLOPs utilisation (MFU): the training FLOPs the model needs per token, against the GPUs' peak.

FLOPs per trained token follow the usual estimate for transformers (Kaplan et al. 2020; PaLM, appendix B):
6 x the dense (non-embedding) parameters for forward plus backward, plus 12 x layers x hidden x sequence length
for the attention scores.  Only non-padding tokens count, so padding never inflates the figure.
"""

from __future__ import annotations

import os

PEAK_ENV = "KIT_TRAIN_PEAK_TFLOPS"

# Dense 16-bit tensor-core peak per GPU in TFLOPS (vendor datasheets, without sparsity).  First match wins.
_PEAK_16BIT_TFLOPS = [
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H200", 989.4),
    ("H100", 989.4),
    ("GH200", 989.4),
    ("B200", 2250.0),
    ("A100", 312.0),
    ("A800", 312.0),
    ("L40S", 362.1),
    ("L40", 181.0),
    ("L4", 121.0),
    ("A10G", 70.0),
    ("A10", 125.0),
    ("V100", 125.0),
    ("RTX 4090", 165.2),
    ("RTX 3090", 71.0),
    ("T4", 65.0),
]


def train_flops_per_token(
    hidden: int, layers: int, intermediate: int, mean_seq_len: float, num_labels: int = 2
) -> float:
    dense = layers * (4 * hidden * hidden + 2 * hidden * intermediate) + hidden * hidden + hidden * num_labels
    return 6.0 * dense + 12.0 * layers * hidden * mean_seq_len


def peak_flops(device_name: str | None) -> float | None:
    """Per-GPU 16-bit peak in FLOP/s: the env override, else the datasheet table, else None (unknown)."""
    if os.environ.get(PEAK_ENV):
        return float(os.environ[PEAK_ENV]) * 1e12
    if not device_name:
        return None
    for needle, tflops in _PEAK_16BIT_TFLOPS:
        if needle.lower() in device_name.lower():
            return tflops * 1e12
    return None


def mfu(flops_per_token: float, tokens_per_s: float, world_size: int, device_name: str | None) -> float | None:
    peak = peak_flops(device_name)
    if not peak or not tokens_per_s:
        return None
    return flops_per_token * tokens_per_s / (peak * world_size)
