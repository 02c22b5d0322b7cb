"""A job for the tests: the training module, then in a kit run's first attempt rank 1 is killed by SIGKILL after its
work is done (the run wrote FINISHED): a rank lost in the final barrier or while the world is torn down."""

import os
import signal
import sys

from train.__main__ import main

if __name__ == "__main__":
    code = main(sys.argv[1:])
    if code == 0 and os.environ.get("RANK") == "1" and not os.environ.get("PET_RDZV_ID"):   # attempt 1 (kit)
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(code)
