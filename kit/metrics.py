"""A trial's learning curve for kit's early stopping (sweep.early_stopping): append one JSON line per evaluation to
`<output dir>/metrics.jsonl`, `{"step": S, "<name>": V, ...}`. The sweep driver reads the lines as they come and
may stop the trial early. Standard library only: safe to import in any training script.

    from kit.metrics import report_metric
    report_metric(args.output_dir, step, loss=val_loss, accuracy=acc)
"""

import json
import math
import os

FILE = "metrics.jsonl"


def report_metric(output_dir: str, step: int, **values) -> None:
    """Append `{"step": step, **values}` to <output_dir>/metrics.jsonl, on rank 0 only (RANK unset counts as
    rank 0), as one write of one line, flushed to the file at once. Values must be finite numbers."""
    if os.environ.get("RANK", "0") != "0":
        return
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"step must be an integer, got {step!r}")
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    os.makedirs(output_dir, exist_ok=True)
    line = json.dumps({"step": step, **{k: float(v) for k, v in values.items()}}) + "\n"
    with open(os.path.join(output_dir, FILE), "a", encoding="utf-8") as f:
        f.write(line)


log = report_metric

__all__ = ["report_metric", "log", "FILE"]
