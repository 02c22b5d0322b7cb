"""A rank that fills its host's disk, then says why it gives up and exits with --code (the others wait). For the
full-disk tests: its last words and code must survive a disk that can take no more of its output."""

import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--rank", type=int, default=1, help="the global rank that fills the disk")
p.add_argument("--code", type=int, default=7)
a = p.parse_args()
rank = int(os.environ.get("RANK", "0"))
print(f"filler rank {rank} starting", flush=True)
if rank == a.rank:
    with open("filler.bin", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * (1 << 16))
        except OSError:
            pass
    try:
        print("the disk is full; giving up", file=sys.stderr, flush=True)
    except OSError:
        pass
    os._exit(a.code)
time.sleep(60)
