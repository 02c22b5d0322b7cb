"""SSH failure summaries: the ranks' teed stderr files (node<N>.ranks) stay on the hosts, but every node's tagged
output streams into its log here. When the failing rank exited with a known code without saying why (a
collective refusal: every rank exits with the code, only the main process explains), the explanation is taken
from those logs, the main process's first, named as whose it is; as the local backend does from the rank files."""

import dataclasses
import re

from launcher.supervise.failure import Failure

_WORKER = re.compile(r"^\[node\d+/rank(\d+)\] ")


def explained_elsewhere(failure: Failure, known: dict, logs: list[str]) -> Failure:
    """`logs`: every node's log text. The failure as it is, or with the lowest rank's last line that starts
    with the code's meaning as its words."""
    start = known.get(failure.code)
    if start is None or failure.last_line.startswith(start):
        return failure
    said = {}
    for text in logs:
        for line in text.splitlines():
            tagged = _WORKER.match(line)
            if tagged and line[tagged.end():].strip().startswith(start):
                said[int(tagged.group(1))] = line[tagged.end():].strip()
    if not said:
        return failure
    rank = min(said)
    words = said[rank] if rank == failure.rank else f"rank {rank} said: {said[rank]}"
    return dataclasses.replace(failure, last_line=words)
