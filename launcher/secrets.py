"""Which environment variables are secret, and how they are masked wherever kit prints or stores them."""

import re

MASK = "****"
_SECRET_NAME = re.compile(r"TOKEN|KEY|PASSWORD|PASSWD|SECRET|CREDENTIAL", re.IGNORECASE)


# Names that match the pattern but are well-known switches, not secrets.
_NOT_SECRET = frozenset({"TOKENIZERS_PARALLELISM"})


def is_secret_name(name: str) -> bool:
    return name not in _NOT_SECRET and bool(_SECRET_NAME.search(name))


def is_secret(name: str, declared: tuple[str, ...] = ()) -> bool:
    """Secret by its name, or because the job lists it in `secret_env` (`DB_URL` looks harmless but is not)."""
    return is_secret_name(name) or name in declared


def mask_env(env: dict[str, str], declared: tuple[str, ...] = ()) -> dict[str, str]:
    return {k: (MASK if is_secret(k, declared) else v) for k, v in env.items()}
