"""Host health as an input of the planner (pure): which hosts caused a failure lately and why, read from the
records at the edge (insight/health.py), never here. A backend's Placement decides what to do with it: hosts the
cluster lists are placed away from them when spares allow (`away_from_failed`), a scheduler is told to exclude
them. What it did is said in the plan's notes, which the dry-run shows and a real run prints."""

from typing import Optional


def away_from_failed(hosts: tuple, nodes: int, failed: dict) -> tuple[tuple, tuple[str, ...]]:
    """(the hosts in the order the planner takes them, notes): each failed host among the first `nodes` swaps
    places with the first healthy spare after them; without a spare it keeps its node and the note says so.
    `failed`: host name -> why (one line). Hosts have `.name`."""
    order, notes = list(hosts), []
    for i in range(min(nodes, len(order))):
        why = failed.get(order[i].name)
        if why is None:
            continue
        spare = next((j for j in range(nodes, len(order)) if order[j].name not in failed), None)
        if spare is None:
            notes.append(
                f"host {order[i].name} {why}; no healthy spare host to place its node on instead, so it "
                f"keeps it (kit hosts --clear {order[i].name} forgives it)"
            )
            continue
        notes.append(
            f"host {order[i].name} {why}; its node goes to spare host {order[spare].name} "
            f"(kit hosts --clear {order[i].name} to use it again)"
        )
        order[i], order[spare] = order[spare], order[i]
    return tuple(order), tuple(notes)


def excluded_note(names: list, failed: dict) -> Optional[str]:
    if not names:
        return None
    whys = "; ".join(f"{n} {failed[n]}" for n in names)
    return (
        f"excluded from the allocation (slurm.exclude_failed_nodes): {whys} (kit hosts --clear NODE to use one again)"
    )


__all__ = ["away_from_failed", "excluded_note"]
