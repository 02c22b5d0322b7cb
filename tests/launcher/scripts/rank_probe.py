"""Launched by kit in tests: reports the world it joined, then lingers, fails, floods or handles SIGTERM slowly.

--on-term save:S   on SIGTERM, take S seconds to "save a checkpoint" (written in pieces, sealed at the end),
                   then exit 75 like the training module's preemption path;
--on-term ignore   ignore SIGTERM entirely (only SIGKILL ends it).
"""

import argparse
import json
import os
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--linger", type=float, default=0.0, help="seconds to stay alive after reporting")
parser.add_argument("--fail-rank", type=int, default=-1, help="this global rank exits with --fail-code")
parser.add_argument("--fail-code", type=int, default=3)
parser.add_argument("--fail-message", default="", help="printed to stderr by the failing rank before it exits")
parser.add_argument("--on-term", default="", help="save:SECONDS or ignore")
parser.add_argument("--flood", type=int, default=0, help="write this many bytes of output lines after reporting")
parser.add_argument("--progress", type=int, default=0, help="write this many progress redraws (\\r lines)")
parser.add_argument("--hang-rank", type=int, default=-1, help="this global rank never reaches the final barrier")
parser.add_argument("rest", nargs="*")
args = parser.parse_args()


def _save_then_exit(seconds: float, rank: int):
    saving = []
    def handler(signum, frame):
        if saving:
            return  # a second SIGTERM (the watchdog's and the agent's) does not restart the save
        saving.append(signum)
        path = os.path.join(args.out, f"ckpt{rank}")
        with open(path + ".partial", "w") as f:
            for i in range(int(seconds * 10)):
                f.write(f"piece {i}\n")
                f.flush()
                time.sleep(0.1)
        os.replace(path + ".partial", path)
        print(f"rank {rank} checkpoint complete", flush=True)
        os._exit(75)
    return handler


import torch.distributed as dist  # noqa: E402  (after argparse: --help stays cheap)
from accelerate import Accelerator  # noqa: E402

# Accelerator, not PartialState: only AcceleratorState honours ACCELERATE_USE_CPU (a CPU world).
kwargs = []
if os.environ.get("KIT_EXPECTED_STRATEGY") == "deepspeed":
    # accelerate + DeepSpeed on CPU forms a world only over an explicit gloo process group.
    from accelerate.utils import InitProcessGroupKwargs
    kwargs.append(InitProcessGroupKwargs(backend="gloo"))
state = Accelerator(kwargs_handlers=kwargs)
if args.on_term == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
elif args.on_term.startswith("save:"):
    signal.signal(signal.SIGTERM, _save_then_exit(float(args.on_term[5:]), state.process_index))
report = {
    "rank": state.process_index,
    "world_size": state.num_processes,
    "distributed_type": str(state.distributed_type),
    "mixed_precision": str(state.mixed_precision),
    "dist_world": dist.get_world_size() if dist.is_initialized() else 1,
    "machine_rank": int(os.environ.get("GROUP_RANK", "-1")),
    "pid": os.getpid(),
    "argv": args.rest,
    "gloo_ifname": os.environ.get("GLOO_SOCKET_IFNAME"),
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
for i in range(args.progress):
    sys.stderr.write(f"\x1b[1Gstep {i + 1}/{args.progress}\n")   # kit's progress mark (planning/tags.py)
    sys.stderr.flush()
    time.sleep(0.05)
if args.flood:
    line = "x" * 99 + "\n"
    for _ in range(args.flood // 100):
        sys.stdout.write(line)
    sys.stdout.flush()
    print(f"probe rank {state.process_index} flooded", flush=True)
if state.process_index == args.fail_rank:
    if args.fail_message:
        print(args.fail_message, file=sys.stderr, flush=True)
    sys.stdout.flush()
    # Not sys.exit: tearing down a live gloo group at interpreter exit can abort in C++ (exit 134, not ours).
    os._exit(args.fail_code)
deadline = time.monotonic() + args.linger
while time.monotonic() < deadline:  # sleep in steps: a signal handler runs between them
    time.sleep(0.1)
while state.process_index == args.hang_rank:   # never enters the collective below: the others wait there
    time.sleep(0.1)
if dist.is_initialized():
    dist.barrier()  # nobody leaves while a peer still talks to it
    dist.destroy_process_group()
