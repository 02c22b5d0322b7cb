"""Shared pydantic base: strict, frozen, unknown keys rejected."""

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

# Names usable as run/job/cluster identifiers: they end up in paths and shell words.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
# Environment variable names, as POSIX shells accept them.
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class StrictModel(BaseModel):
    """Unknown keys and type coercions (\"8\" for 8) are errors, not guesses."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# Variables kit sets on every node to carry the planned world and the run's identity (train/ and cancel read them).
RESERVED_ENV = ("KIT_RUN_ID", "KIT_MASTER_ADDR", "KIT_PROGRESS")
RESERVED_ENV_PREFIX = "KIT_EXPECTED_"


def no_reserved_env(env: dict) -> dict:
    """Users may not set the variables kit uses to pass the planned world; other KIT_* names are theirs."""
    for name in env:
        if name in RESERVED_ENV or name.startswith(RESERVED_ENV_PREFIX):
            raise ValueError(f"{name} is set by kit itself (it carries the planned world); rename or remove it")
    return env


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(value: str) -> str:
    """A value that lands on one line of a generated script (an `#SBATCH` option, a path in a `cd`): a newline or
    another control character would start a command of its own there."""
    bad = _CONTROL.search(value)
    if bad:
        raise ValueError(f"{value!r} holds a control character ({bad.group()!r}); it must be one line of text")
    return value


OneLine = Annotated[str, AfterValidator(one_line)]
