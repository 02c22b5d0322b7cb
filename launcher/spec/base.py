"""Shared pydantic base: strict, frozen, unknown keys rejected."""

from pydantic import BaseModel, ConfigDict

# Names usable as run/job/cluster identifiers: they end up in paths and shell words.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
# Environment variable names, as POSIX shells accept them.
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class StrictModel(BaseModel):
    """Unknown keys and type coercions (\"8\" for 8) are errors, not guesses."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def no_reserved_env(env: dict) -> dict:
    """KIT_* variables carry the planned world to the job; users may not set them."""
    for name in env:
        if name.startswith("KIT_"):
            raise ValueError(f"{name} is set by kit itself (KIT_* carry the planned world); rename or remove it")
    return env
