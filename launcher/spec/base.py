"""Shared pydantic base: strict, frozen, unknown keys rejected."""

from pydantic import BaseModel, ConfigDict

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
