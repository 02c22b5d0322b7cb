"""`python -m train` (what `kit submit` starts on every rank)."""

import sys

import train  # noqa: F401  (sets HF_HUB_OFFLINE before transformers is imported)


def main(argv=None) -> int:
    from train.args import parse_args
    from train.run import run

    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
