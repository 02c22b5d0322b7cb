"""Host health, for both faces (`kit hosts [--clear HOST]`, the API's kit.hosts()): the hosts of your runs, the
failures each caused (with run ids and dates, from trusted records only: insight/health.py), and which ones kit
places runs away from."""

import logging
from typing import Optional

from launcher.errors import KitError

log = logging.getLogger(__name__)


def host_rows() -> list:
    """One dict per host, by name: host, backend, runs, avoided, why, cleared_at, failures [{run_id, attempt, at,
    cause}]."""
    from launcher.insight.health import cleared, ledger, suspect

    book, forgiven = ledger(), cleared()
    rows = []
    for name in sorted(book):
        h = book[name]
        found = suspect(h, forgiven.get(name))
        rows.append(
            {
                "host": name,
                "backend": h.backend,
                "runs": len(h.runs),
                "avoided": found is not None,
                "why": found.why if found else "",
                "cleared_at": forgiven.get(name),
                "failures": [
                    {"run_id": f.run_id, "attempt": f.attempt, "at": f.at, "cause": f.cause} for f in h.failures
                ],
            }
        )
    return rows


def clear_host(host: str) -> str:
    """Forgive `host`: the failures it caused up to now no longer count. The line to print; a host no run of yours
    used is one line of error."""
    from launcher.insight.health import clear, ledger

    book = ledger()
    if host not in book:
        known = ", ".join(sorted(book)) or "none yet"
        raise KitError(f"--clear {host}: no run of yours used a host of that name (hosts: {known})")
    clear(host)
    return f"kit: host {host} forgiven: the failures it caused up to now no longer count; runs are placed on it again"


def hosts(clear: Optional[str] = None) -> list:
    """The API's kit.hosts(): the rows of host_rows(); `clear`: forgive that host first (its line logged)."""
    if clear is not None:
        log.info(clear_host(clear))
    return host_rows()


__all__ = ["host_rows", "clear_host", "hosts"]
