"""A rank that prints like most user scripts (no flush) and then works for a while: its lines must still reach
the node log at once."""

import os
import time

print(f"rank {os.environ.get('RANK', '?')} says hello without flushing")
time.sleep(float(os.environ.get("QUIET_PRINTER_SLEEP", "120")))
