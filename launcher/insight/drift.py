"""Environment drift between nodes, judged in kit from the fingerprints the nodes reported (render/envcheck.py's
program, run on each node): the table of what differs, and the verdict of the job's `env_check`."""

import functools
import logging
from typing import Optional

from launcher.errors import KitError

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _node_side() -> dict:
    """The node program's functions, from the same text the nodes run (so the table is drawn one way)."""
    from launcher.render.envcheck import SOURCE

    namespace = {"__name__": "kit_env_check"}
    exec(compile(SOURCE, "<kit env check>", "exec"), namespace)
    return namespace


def fingerprint(kind: str, target: str) -> dict:
    """This machine's fingerprint (tests and kit doctor compare with it)."""
    return _node_side()["kit_env_fingerprint"](kind, target)


def differing(reports: list) -> list:
    """reports: [(label, fingerprint)] -> [(item, [value per report])], the items that differ."""
    return _node_side()["kit_env_differing"](reports)


def table(reports: list, rows: list) -> list:
    return _node_side()["kit_env_table"](reports, rows)


def summary(reports: list, rows: list) -> str:
    return _node_side()["kit_env_summary"](reports, rows)


def judge(mode: str, reports: list) -> Optional[str]:
    """Log the table of what differs; raise KitError (one line) in strict mode. Returns the summary line said, or
    None when the nodes agree (or the check is off)."""
    if mode == "off" or len(reports) < 2:
        return None
    rows = differing(reports)
    if not rows:
        return None
    strict = mode == "strict"
    head = "kit: the nodes' environments differ" + (":" if strict else " (env_check: warn, training anyway):")
    log.warning("\n".join([head] + ["  " + line for line in table(reports, rows)]))
    what = summary(reports, rows)
    if strict:
        raise KitError(
            f"environment drift between nodes: {what}; nothing was started: make every node's "
            f"environment the same (the table above), or set env_check: warn (or off) to train anyway"
        )
    return what


def judge_plan(plan, fingerprints: dict) -> Optional[str]:
    """judge() for a plan's nodes, `fingerprints` by node rank (a backend's checks collected them). A node whose
    checks sent none is not silently left out: strict refuses the run, warn says so."""
    missing = [n for n in plan.nodes if n.machine_rank not in fingerprints]
    if plan.env_check != "off" and missing and len(plan.nodes) > 1:
        names = ", ".join(f"node {n.machine_rank} ({n.host})" for n in missing)
        if plan.env_check == "strict":
            raise KitError(
                f"env_check: {names} sent no environment fingerprint (its checks printed none), so the "
                f"nodes cannot be compared; nothing was started: see that host's Python (3.9+ needed "
                f"for the check), or set env_check: warn (or off)"
            )
        log.warning(f"kit: warning: env_check: {names} sent no environment fingerprint; not compared")
    reports = [
        (f"node {n.machine_rank} ({n.host})", fingerprints[n.machine_rank])
        for n in plan.nodes
        if n.machine_rank in fingerprints
    ]
    return judge(plan.env_check, reports)


def doctor_rows(reports: list) -> list:
    """`kit doctor`'s rows for the check a run makes: one per host and differing item (`env ITEM`, FAIL, the
    value: commands/doctor.py prints them as this module's table too), or one `environment` row per host."""
    rows = differing(reports)
    if not rows:
        return [
            (host, "environment", "PASS", "the same on every host (versions, CUDA/NCCL, the job's code)")
            for host, _ in reports
        ]
    return [
        (host, f"env {item}", "FAIL", "-" if values[i] is None else str(values[i]))
        for i, (host, _) in enumerate(reports)
        for item, values in rows
    ]


__all__ = ["fingerprint", "differing", "table", "summary", "judge", "judge_plan", "doctor_rows"]
