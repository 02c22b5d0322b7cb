"""How a run the backend followed ended."""

from dataclasses import dataclass
from typing import Optional

from launcher.states import AttemptEnd
from launcher.status import Failure


@dataclass(frozen=True)
class Result:
    """kit's exit code, how the attempt kit followed ended (a run state that ends it, or still running), the first
    failure if any; where kit followed the nodes itself, when it saw the failure and when every node had ended
    (wall clock; the restart loop records them for kit report)."""

    code: int
    state: AttemptEnd
    failure: Optional[Failure] = None
    noticed_at: Optional[float] = None
    ended_at: Optional[float] = None

    def __post_init__(self):
        object.__setattr__(self, "state", AttemptEnd(self.state))
