"""The last line of a run: how it ended and, when it failed, why, in one line."""

from typing import Optional

from launcher.supervise.failure import Failure, summary_line


def outcome_line(run_id: str, state: str, code: int, failure: Optional[Failure]) -> str:
    if failure is not None:
        return summary_line(run_id, state, failure)
    if state == "cancelled":
        return f"kit: run {run_id} cancelled (exit code {code}); no process of it is left"
    return f"kit: run {run_id} {state} (exit code {code})"
