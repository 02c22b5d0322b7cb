"""`python -m train` (what `kit submit` starts on every rank)."""

import os
import sys

import train  # noqa: F401  (sets HF_HUB_OFFLINE before transformers is imported)


def main(argv=None) -> int:
    from train import pipeline_run
    from train.args import parse_args
    from train.run import run

    args = parse_args(argv)
    stages = pipeline_run.stages_from_env()
    if stages > 1:  # kit's job `pipeline_stages`: the model's stages across the world's processes (opt-in loop)
        return pipeline_run.run(args, stages)
    return run(args)


if __name__ == "__main__":
    code = main()
    # Out without the interpreter's teardown: gloo's threads, destroyed with the process group's objects at exit,
    # have aborted a rank (SIGABRT, "terminate called without an active exception") after it had said its
    # one-line failure, and the run was then reported as killed by SIGABRT. Everything the job writes is closed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
