"""A script whose Accelerator is built by a helper module beside it."""
from helper_builds_accelerator import make

open("STARTED", "w").write("started\n")
accelerator = make()
