"""What an echo run's record keeps of its own: the greeting it said."""

from dataclasses import dataclass
from typing import Optional

from launcher.backends.handle import Handle
from launcher.wellformed import checked, text


@dataclass(frozen=True)
class EchoHandle(Handle):
    greeting: Optional[str] = checked(None, text)


HANDLE = EchoHandle
