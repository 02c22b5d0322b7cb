"""How a run the backend followed ended."""

from dataclasses import dataclass
from typing import Optional

from launcher.states import AttemptEnd
from launcher.status import Failure


@dataclass(frozen=True)
class Result:
    """kit's exit code, how the attempt kit followed ended (a run state that ends it, or still running), the first
    failure if any."""
    code: int
    state: AttemptEnd
    failure: Optional[Failure] = None

    def __post_init__(self):
        object.__setattr__(self, "state", AttemptEnd(self.state))
