"""sweep.png in the sweep record: the metric against each parameter, one panel per parameter, the best marked.
A log x axis for log ranges and for positive numbers spanning a decade or more; text values are categories."""

import logging
import hashlib
import json
import math
import os

from launcher.states import RunState

log = logging.getLogger(__name__)

PNG = "sweep.png"
KEY = ".sweep.png.key"  # what the plot shows, hashed: `kit sweep status` redraws it only when that changed


def _number(value):
    """Numbers as numbers: YAML reads `1e-4` (no dot) as text, and it means the number here."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _log_axis(spec_param, xs: list) -> bool:
    if isinstance(spec_param, dict) and spec_param.get("scale") == "log":
        return True
    return bool(xs) and min(xs) > 0 and max(xs) / min(xs) >= 10


def _label(ax, xs: list, points: list) -> None:
    """Each point's trials by name: trials with equal values and metric share one dot, drawn larger, named
    together ("t1,t4"), so no trial hides behind another."""
    groups: dict[tuple, list[int]] = {}
    for x, (_, metric, index) in zip(xs, points):
        groups.setdefault((x, metric), []).append(index)
    for (x, metric), indices in groups.items():
        if len(indices) > 1:
            ax.scatter([x], [metric], s=36 * len(indices), facecolors="none", edgecolors="tab:blue")
        ax.annotate(
            ",".join(f"t{i}" for i in indices),
            (x, metric),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize="x-small",
            color="dimgray",
        )


def _panel(ax, name: str, spec_param, points: list, best, metric: str) -> None:
    """`points`: (parameter value, metric, trial index) of each scored trial."""
    xs = [_number(p) for p, _, _ in points]
    if all(x is not None for x in xs):
        ax.scatter(xs, [m for _, m, _ in points])
        _label(ax, xs, points)
        if _log_axis(spec_param, xs):
            ax.set_xscale("log")
        values = sorted(set(xs))
        if len(values) <= 8:  # a grid's few values: tick exactly those, uncluttered by log minor labels
            from matplotlib.ticker import NullFormatter

            ax.set_xticks(values, [f"{v:g}" for v in values])
            ax.xaxis.set_minor_formatter(NullFormatter())
        if best is not None:
            ax.scatter([_number(best[0])], [best[1]], marker="*", s=200, color="tab:red", label="best")
    else:  # categories, in the order the sweep lists them
        labels = list(dict.fromkeys(str(p) for p, _, _ in points))
        at = [labels.index(str(p)) for p, _, _ in points]
        ax.scatter(at, [m for _, m, _ in points])
        _label(ax, at, points)
        ax.set_xticks(range(len(labels)), labels)
        if best is not None:
            ax.scatter([labels.index(str(best[0]))], [best[1]], marker="*", s=200, color="tab:red", label="best")
    ax.set_xlabel(name)
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    if best is not None:
        ax.legend(loc="best", fontsize="small")


def _drawn(record, key: str) -> bool:
    try:
        with open(record.file(KEY), encoding="utf-8") as f:
            return f.read() == key and os.path.isfile(record.file(PNG))
    except OSError:
        return False


def _curves_panel(ax, view: dict, trail: dict) -> None:
    """Each trial's learning curve (its metrics.jsonl, kept in its record): pruned ones dashed, ended with an x."""
    for r in view["trials"]:
        points = trail.get(r["run_id"])
        if not points:
            continue
        steps, values = [p[0] for p in points], [p[1] for p in points]
        pruned = r["state"] == RunState.PRUNED
        (line,) = ax.plot(steps, values, linestyle="--" if pruned else "-", linewidth=1, alpha=0.8)
        if pruned:
            ax.scatter([steps[-1]], [values[-1]], marker="x", color=line.get_color(), s=30)
        ax.annotate(
            f"t{r['index']}",
            (steps[-1], values[-1]),
            textcoords="offset points",
            xytext=(3, 0),
            fontsize="x-small",
            color="dimgray",
        )
    ax.plot([], [], linestyle="--", color="gray", marker="x", label=str(RunState.PRUNED))
    ax.set_xlabel("step")
    ax.set_ylabel(view["metric"])
    ax.set_title("learning curves", fontsize="small")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")


def write_plot(record, view: dict) -> None:
    """Write the plot if any trial has a metric; a line (logged) tells where, or why not. With early stopping, a last
    panel draws every trial's learning curve, the pruned ones marked."""
    from launcher.sweeps.curves import kept

    scored = [r for r in view["trials"] if r["metric"] is not None]
    trail = (
        {r["run_id"]: kept(record.trial_dir(r["run_id"])) for r in view["trials"]} if view.get("early_stopping") else {}
    )
    if not scored and not any(trail.values()):
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.info("kit: matplotlib is not installed; no sweep.png")
        return
    spec = record.read()["spec"]["parameters"]
    names = view["parameters"]
    best = next((r for r in scored if r["run_id"] == view["best"]), None)
    key = hashlib.sha256(
        json.dumps(
            [[r["index"], r["params"], r["metric"]] for r in scored]
            + [view["best"], view["metric"], view["goal"], names]
            + ([trail, [r.get("state") for r in view["trials"]]] if trail else []),
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()
    if _drawn(record, key):
        log.info(f"kit: plot: {record.file(PNG)} (unchanged)")
        return
    panels = len(names) + (1 if any(trail.values()) else 0)
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 3.6), squeeze=False)
    if any(trail.values()):
        _curves_panel(axes[0][-1], view, trail)
    for ax, name in zip(axes[0], names):
        points = [(r["params"][name], r["metric"], r["index"]) for r in scored]
        _panel(
            ax,
            name,
            spec.get(name),
            points,
            None if best is None else (best["params"][name], best["metric"]),
            view["metric"],
        )
    fig.suptitle(f"sweep {view['sweep_id']}: {view['metric']} ({view['goal']})", fontsize="medium")
    fig.tight_layout()
    try:
        fig.savefig(record.file(PNG), dpi=100)
        with open(record.file(KEY), "w", encoding="utf-8") as f:
            f.write(key)
        log.info(f"kit: plot: {record.file(PNG)}")
    except OSError as e:
        log.warning(f"kit: could not write {record.file(PNG)}: {e.strerror}")
    finally:
        plt.close(fig)
