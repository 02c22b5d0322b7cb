"""The local backend: every node on this machine, each a watchdog-supervised process tree."""
