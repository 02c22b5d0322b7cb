"""The Accelerator built in a helper of the script's own: read too."""
from accelerate import Accelerator


def make():
    return Accelerator()
