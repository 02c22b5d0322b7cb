"""How a run the backend followed ended."""

from dataclasses import dataclass
from typing import Optional

from launcher.status import Failure


@dataclass(frozen=True)
class Result:
    """kit's exit code, the run's state, the first failure if any."""
    code: int
    state: str
    failure: Optional[Failure] = None
