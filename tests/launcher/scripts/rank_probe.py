"""Launched by kit in tests: reports the world it joined, then optionally lingers or fails."""

import argparse
import json
import os
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--linger", type=float, default=0.0, help="seconds to stay alive after reporting")
parser.add_argument("--fail-rank", type=int, default=-1, help="this global rank exits with code 3")
parser.add_argument("rest", nargs="*")
args = parser.parse_args()

import torch.distributed as dist  # noqa: E402  (after argparse: --help stays cheap)
from accelerate import Accelerator  # noqa: E402

# Accelerator, not PartialState: only AcceleratorState honours ACCELERATE_USE_CPU (a CPU world).
kwargs = []
if os.environ.get("KIT_EXPECTED_STRATEGY") == "deepspeed":
    # accelerate + DeepSpeed on CPU works only when the script asks for a gloo process group itself
    # (ACCELERATE_USE_CPU=1 is no way out: it silently drops DeepSpeed for plain DDP).
    from accelerate.utils import InitProcessGroupKwargs
    kwargs.append(InitProcessGroupKwargs(backend="gloo"))
state = Accelerator(kwargs_handlers=kwargs)
report = {
    "rank": state.process_index,
    "world_size": state.num_processes,
    "distributed_type": str(state.distributed_type),
    "mixed_precision": str(state.mixed_precision),
    "dist_world": dist.get_world_size() if dist.is_initialized() else 1,
    "machine_rank": int(os.environ.get("GROUP_RANK", "-1")),
    "pid": os.getpid(),
    "argv": args.rest,
}
# All-reduce proves the processes really share one world.
if dist.is_initialized():
    import torch
    t = torch.tensor([state.process_index + 1.0])
    dist.all_reduce(t)
    report["allreduce_sum"] = t.item()
with open(os.path.join(args.out, f"rank{state.process_index}.json"), "w") as f:
    json.dump(report, f)
print(f"probe rank {state.process_index}/{state.num_processes} ready", flush=True)
if state.process_index == args.fail_rank:
    sys.exit(3)
time.sleep(args.linger)
