"""A sweep trial with a known learning curve (no torch): loss(step) = (lr - 0.3)^2 + (x - 0.7)^2 + 1/step (the
optimum lr 0.3, x 0.7), one line per step into <output dir>/metrics.jsonl (kit.report_metric), a short sleep
between steps, metrics.json at the end. Used by tests/sweeps/test_tuning*.py and bench/tuning.py."""

import argparse
import json
import os
import time

from kit.metrics import report_metric

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", required=True)
parser.add_argument("--lr", type=float, default=1.0)
parser.add_argument("--x", type=float, default=0.7)
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--sleep", type=float, default=0.05)
parser.add_argument("--burst", type=int, default=0, help="write the first N steps' lines at once, in one write")
parser.add_argument("--burst-lr", type=float, default=None, help="burst only for this --lr")
args = parser.parse_args()
if args.burst_lr is not None and args.lr != args.burst_lr:
    args.burst = 0


def loss(step: int) -> float:
    return (args.lr - 0.3) ** 2 + (args.x - 0.7) ** 2 + 1.0 / step


if args.burst:
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "metrics.jsonl"), "a") as f:
        f.write("".join(json.dumps({"step": s, "loss": loss(s)}) + "\n" for s in range(1, args.burst + 1)))
for step in range(args.burst + 1, args.steps + 1):
    time.sleep(args.sleep)
    report_metric(args.output_dir, step, loss=loss(step))
if os.environ.get("RANK", "0") == "0":
    with open(os.path.join(args.output_dir, "metrics.json"), "w") as f:
        json.dump({"loss": loss(args.steps), "steps": args.steps}, f)
