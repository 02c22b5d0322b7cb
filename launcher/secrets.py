"""Which environment variables are secret, and how they are masked wherever kit prints or stores them."""

import re

MASK = "****"
_SECRET_NAME = re.compile(r"TOKEN|KEY|PASSWORD|PASSWD|SECRET|CREDENTIAL", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def mask_env(env: dict[str, str], extra_secret: tuple[str, ...] = ()) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) or k in extra_secret else v) for k, v in env.items()}
