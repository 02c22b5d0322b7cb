"""The rendezvous port, derived in one place: from the run id, so two runs on one host do not both take 29500,
and per sweep lane, so trials of one sweep running side by side never draw the same port."""

import zlib
from typing import Optional

from launcher.spec.cluster import PortPolicy


def _spread(policy: PortPolicy, key: str, offset: int = 0) -> int:
    return policy.base + (zlib.crc32(key.encode()) + offset) % policy.span


def master_port(policy, run_id: str) -> int:
    """A fixed port, or base + crc32(run id) % span."""
    if isinstance(policy, int):
        return policy
    assert isinstance(policy, PortPolicy)
    return _spread(policy, run_id)


def lane_port(policy, sweep_id: str, lane: int, lanes: int) -> Optional[int]:
    """Lane `lane`'s fixed port: a fixed port + lane, or base + (crc32(sweep id) + lane) % span (per-run-id ports
    would clash once in `span` pairs); None (the run id decides) when the span is narrower than the lanes."""
    if isinstance(policy, int):
        return policy + lane
    if policy.span < lanes:
        return None
    return _spread(policy, sweep_id, lane)
