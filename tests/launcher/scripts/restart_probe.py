"""A rank for restart tests: joins the gloo world, writes what world it joined (master address and port, the
attempt's rendezvous id) into --out, and on the first attempt rank 1 dies by SIGKILL after joining (--once FILE
marks that it did). Rank 0 waits a moment before its last collective, so the SIGKILL is the first failure seen."""

import argparse
import json
import os
import signal
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--once", required=True)
a = p.parse_args()
dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(1)
dist.all_reduce(t)
seen = {"rank": rank, "world": dist.get_world_size(), "sum": t.item(), "master_addr": os.environ["MASTER_ADDR"],
        "master_port": int(os.environ["MASTER_PORT"]), "rdzv_id": os.environ.get("PET_RDZV_ID", "")}
with open(os.path.join(a.out, f"rank{rank}-port{seen['master_port']}.json"), "w") as f:
    json.dump(seen, f)
print(f"restart probe rank {rank} joined on port {seen['master_port']}", flush=True)
if rank == 1 and not os.path.exists(a.once):
    open(a.once, "w").close()
    os.kill(os.getpid(), signal.SIGKILL)
if rank == 0:
    time.sleep(3)
dist.barrier()
dist.destroy_process_group()
