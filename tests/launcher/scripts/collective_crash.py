"""Launched by kit in tests: a small DDP loop where every rank warns like a library does, then one rank fails
while the others wait in the gradient all-reduce (they die with torch.distributed's error when its sockets close).

--how raise   the failing rank raises ValueError (a traceback of its own, then the others' collective errors)
--how exit    it exits with --code and no traceback (the others' collective errors are the only tracebacks)
--how kill    it is killed by SIGKILL (as the OOM killer does): it says nothing, the others' errors follow
"""

import argparse
import os
import signal
import time
import warnings

parser = argparse.ArgumentParser()
parser.add_argument("--fail-rank", type=int, default=1)
parser.add_argument("--how", choices=("raise", "exit", "kill"), default="raise")
parser.add_argument("--code", type=int, default=3)
parser.add_argument("--at-step", type=int, default=3)
parser.add_argument("--quiet", action="store_true", help="only the main process prints its steps (as train does)")
args = parser.parse_args()

import torch  # noqa: E402  (after argparse: --help stays cheap)
import torch.distributed as dist  # noqa: E402
from accelerate import Accelerator  # noqa: E402

accelerator = Accelerator()
rank = accelerator.process_index
# What a library's deprecation warning looks like, printed once by every rank.
warnings.warn("`batch_first` is deprecated and will be removed in a future release", FutureWarning)
model, optimizer = accelerator.prepare(torch.nn.Linear(8, 2), None)
x = torch.ones(4, 8)


def load_batch(step: int):
    raise ValueError(f"bad batch at step {step}: column 'label' is empty")


for step in range(40):
    if rank == args.fail_rank and step == args.at_step:
        if args.how == "exit":
            print(f"rank {rank} gives up at step {step}", flush=True)
            os._exit(args.code)
        if args.how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        load_batch(step)
    loss = model(x).sum()
    accelerator.backward(loss)   # the all-reduce the other ranks are left waiting in
    if rank == 0 or not args.quiet:
        print(f"rank {rank} step {step}", flush=True)
    time.sleep(0.3)
if dist.is_initialized():
    dist.barrier()
    dist.destroy_process_group()
