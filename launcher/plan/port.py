"""The rendezvous port: derived from the run id so two runs on one host do not both take 29500."""

import zlib

from launcher.spec.cluster import PortPolicy


def master_port(policy, run_id: str) -> int:
    if isinstance(policy, int):
        return policy
    assert isinstance(policy, PortPolicy)
    return policy.base + zlib.crc32(run_id.encode()) % policy.span
