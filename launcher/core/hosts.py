"""A cluster's health, for both faces: can it run jobs (`kit doctor`: the cluster loaded, the job planned as kit submit
would, the rows its backend checks), and host health (`kit hosts [--clear HOST]`, the API's kit.hosts()): the hosts
of your runs, the failures each caused (with run ids and dates, from trusted records only: insight/health.py), and
which ones kit places runs away from."""

import logging
from typing import Optional

from launcher.backends import registry
from launcher.core.request import Request
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


# Can this cluster run jobs? The checks `kit doctor` prints, for either face: the cluster loaded, the job (when one
# is named) planned as kit submit would, and the rows the cluster's backend checks: (where, check, verdict, detail).


def doctor_rows(cluster_path: str, request: Optional[Request] = None) -> tuple:
    """(the cluster's name, its rows); `request`: a job (file, script or module) whose entrypoint is looked for."""
    from launcher.planning.placement import RUN
    from launcher.spec import Overrides, apply_overrides, load_cluster, load_user_deepspeed

    cluster = load_cluster(cluster_path)
    backend = registry.backend(cluster.backend)
    registry.placement(cluster.backend).validate(cluster, RUN)
    job = plan = None
    if request is not None:
        from launcher.core.prepare import job_of
        from launcher.planning.build import build_plan

        job = job_of(request)  # a job file, a script or a module, as kit submit reads them
        plan = build_plan(job, cluster, Overrides(), "kit-doctor", user_deepspeed=load_user_deepspeed(job))
        job, cluster = apply_overrides(job, cluster, Overrides())
    return cluster.name, backend.doctor_rows(cluster, job, plan)
