"""A cheap sweep trial for the tests (no torch): writes <output dir>/metrics.json with a score computed from
--x, after lingering (and after --wait-for FILE exists); or fails at once with --fail CODE."""

import argparse
import json
import os
import socket
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", required=True)
parser.add_argument("--x", type=float, default=1.0)
parser.add_argument("--linger", type=float, default=0.0, help="seconds to stay alive before writing metrics")
parser.add_argument("--wait-for", default="", help="stay alive until this file exists ('' or none: do not)")
parser.add_argument("--fail", type=int, default=0, help="exit with this code at once")
parser.add_argument("--no-metrics", type=int, default=0, help="1: succeed without writing metrics.json")
args = parser.parse_args()
if args.fail:
    print(f"probe: failing on purpose with exit code {args.fail}", file=sys.stderr, flush=True)
    sys.exit(args.fail)
print(f"probe trial {os.environ.get('KIT_RUN_ID')} ready on {socket.gethostname()}", flush=True)
deadline = time.monotonic() + args.linger
while time.monotonic() < deadline or (args.wait_for not in ("", "none") and not os.path.exists(args.wait_for)):
    time.sleep(0.1)  # short sleeps: SIGTERM's default action ends it at once
if os.environ.get("RANK", "0") == "0" and not args.no_metrics:
    os.makedirs(args.output_dir, exist_ok=True)
    metrics = {"score": -(args.x - 2.0) ** 2, "evals": [{"accuracy": 0.5}, {"accuracy": args.x / 10}],
               "final": {"loss": (args.x - 2.0) ** 2},
               "host": socket.gethostname()}
    with open(os.path.join(args.output_dir, "metrics.json"), "w") as f:
        json.dump(metrics, f)
