"""A script that builds an Accelerator and names no process group backend (refused under DeepSpeed on CPU)."""
from accelerate import Accelerator

open("STARTED", "w").write("started\n")
accelerator = Accelerator()
