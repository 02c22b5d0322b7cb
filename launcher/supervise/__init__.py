"""Following a run's nodes: the watchdog each node runs under, the supervising loop, the console, failure
summaries, liveness of a record's processes."""

import os

# The node watchdog's source, run by path on this machine (it imports nothing of kit's, so no PYTHONPATH is added
# to the node's env) and shipped as text to SSH hosts.
WATCHDOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "watchdog.py")
# Its output part, beside it: imported by name when the watchdog runs by path, loaded first by the SSH boot program.
WATCHDOG_OUTPUT = os.path.join(os.path.dirname(WATCHDOG), "watchdog_output.py")
