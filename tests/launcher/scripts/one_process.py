"""A one-process job for the launch-path tests: says it started, stays silent for --sleep seconds (longer than the
run's timeouts.rendezvous), then ends with --exit CODE or dies by --signal NAME. Standard library only."""

import argparse
import os
import signal
import time

p = argparse.ArgumentParser()
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--exit", type=int, default=0)
p.add_argument("--signal", default="")
p.add_argument("--once", default="", help="a file: only the first attempt (the file absent) ends by --signal")
a = p.parse_args()
print(f"one process started, pid {os.getpid()}, world {os.environ.get('KIT_EXPECTED_WORLD_SIZE')}", flush=True)
time.sleep(a.sleep)
if a.signal and not (a.once and os.path.exists(a.once)):
    if a.once:
        open(a.once, "w").close()
    print(f"about to die by {a.signal}", flush=True)
    os.kill(os.getpid(), getattr(signal, a.signal))
print(f"one process done after {a.sleep:g} s, exit {a.exit}", flush=True)
raise SystemExit(a.exit)
