"""The local backend: every node on this machine, each a watchdog-supervised process tree."""

HELP = "this machine"  # what the CLI's help says of it
DOCTOR = None  # kit doctor has nothing to check: a local run is checked before it starts
