"""Launched by kit in tests: reports the world it joined and what it finds in its environment.

--show NAME    report the variable's value (or null): for stray launcher variables that must not arrive
--hash NAME    report sha256 of the value (or null): for secrets, whose values must never be printed
--hold FILE    after reporting, wait until FILE exists (up to 120 s), so a test can inspect the live processes
"""

import argparse
import hashlib
import json
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--show", action="append", default=[])
parser.add_argument("--hash", action="append", default=[])
parser.add_argument("--hold", default="")
args = parser.parse_args()

import torch.distributed as dist  # noqa: E402  (after argparse: --help stays cheap)
from accelerate import Accelerator  # noqa: E402

# Accelerator, not PartialState: only AcceleratorState honours ACCELERATE_USE_CPU (a CPU world).
state = Accelerator()


def digest(name):
    value = os.environ.get(name)
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


report = {
    "rank": state.process_index,
    "world_size": state.num_processes,
    "dist_world": dist.get_world_size() if dist.is_initialized() else 1,
    "machine_rank": int(os.environ.get("GROUP_RANK", "-1")),
    "shown": {name: os.environ.get(name) for name in args.show},
    "hashes": {name: digest(name) for name in args.hash},
}
with open(os.path.join(args.out, f"rank{state.process_index}.json"), "w") as f:
    json.dump(report, f)
print(f"env probe rank {state.process_index}/{state.num_processes} ready", flush=True)
deadline = time.monotonic() + 120
while args.hold and not os.path.exists(args.hold) and time.monotonic() < deadline:
    time.sleep(0.1)
