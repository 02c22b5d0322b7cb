"""Which environment variables are secret, and how they are masked wherever kit prints or stores them."""

import re

MASK = "****"
_SECRET_NAME = re.compile(r"TOKEN|KEY|PASSWORD|PASSWD|SECRET|CREDENTIAL", re.IGNORECASE)


# Names that match the pattern but are well-known switches, not secrets.
_NOT_SECRET = frozenset({"TOKENIZERS_PARALLELISM"})


def is_secret_name(name: str) -> bool:
    return name not in _NOT_SECRET and bool(_SECRET_NAME.search(name))


def mask_env(env: dict[str, str], extra_secret: tuple[str, ...] = ()) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) or k in extra_secret else v) for k, v in env.items()}
