"""A cheap rank for worlds of many nodes (bench/scale.py, tests/backends/test_scale.py): stamps that it started
(before importing torch), joins the gloo world torchrun describes, all-reduces its rank + 1, stamps the sum, then
stays until it is stopped.

    world_probe.py STAMP_DIR      writes STAMP_DIR/started-<rank> (a time) and STAMP_DIR/world-<rank> (time, sum)
"""

import os
import sys
import time

stamps, rank = sys.argv[1], os.environ.get("RANK", "x")


def stamp(kind: str, text: str = "") -> None:
    path = os.path.join(stamps, f"{kind}-{rank}")
    with open(path + ".tmp", "w") as f:
        f.write(f"{time.time()!r} {text}\n")
    os.replace(path + ".tmp", path)


stamp("started")
import torch  # noqa: E402  (after the stamp: the stamp marks the rank's start, the import is most of its cost)
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo")
total = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(total)
print(f"world probe rank {dist.get_rank()}/{dist.get_world_size()} sum {total.item():.0f}", flush=True)
stamp("world", f"{dist.get_world_size()} {total.item():.0f}")
while True:   # until kit stops the run
    time.sleep(0.5)
