"""Files a run leaves in its output directory: metrics.json, classification_report.txt, curves.png."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json(path: Path, data: dict) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


CURVE = "metrics.jsonl"  # kit's sweep contract: one line per evaluation, read while the run goes (early stopping)


def append_curve(output_dir: str, step: int, **values: float) -> None:
    """One JSON line `{"step": S, "loss": L, "accuracy": A}` appended to <output_dir>/metrics.jsonl, on the main
    process only (the caller's check). Written here directly: train/ does not import kit."""
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, CURVE), "a", encoding="utf-8") as f:
        f.write(json.dumps({"step": int(step), **{k: float(v) for k, v in values.items()}}) + "\n")


def classification_outputs(labels: list[int], preds: list[int], names: list[str]) -> tuple[str, dict]:
    """scikit-learn's per-class precision/recall/F1 report plus the confusion matrix, as text and as data."""
    from sklearn.metrics import classification_report, confusion_matrix

    ids = list(range(len(names)))
    report = classification_report(labels, preds, labels=ids, target_names=names, digits=4, zero_division=0)
    as_dict = classification_report(labels, preds, labels=ids, target_names=names, output_dict=True, zero_division=0)
    matrix = confusion_matrix(labels, preds, labels=ids).tolist()
    width = max(8, *(len(n) for n in names))
    lines = [
        "confusion matrix (rows: true label, columns: predicted)",
        " " * width + "".join(f"{n:>{width + 1}}" for n in names),
    ]
    lines += [f"{n:>{width}}" + "".join(f"{c:>{width + 1}}" for c in row) for n, row in zip(names, matrix)]
    text = report + "\n" + "\n".join(lines) + "\n"
    return text, {"report": as_dict, "confusion_matrix": matrix, "labels": names}


def plot_curves(
    path: Path, train_log: list[dict], evals: list[dict], info: dict | None = None, pretrain: dict | None = None
) -> None:
    figure = curves_figure(train_log, evals, info, pretrain)
    figure.savefig(path, dpi=100)
    import matplotlib.pyplot as plt

    plt.close(figure)


def curves_figure(train_log: list[dict], evals: list[dict], info: dict | None = None, pretrain: dict | None = None):
    """Top: loss, validation accuracy, the pretraining phase; bottom: each rank's peak memory, utilisation and
    samples/s per logging interval, over both phases (steps run on from pretraining into fine-tuning)."""
    import matplotlib

    matplotlib.use("Agg")  # no display on cluster nodes
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    (ax_loss, ax_acc, ax_pre), resource_axes = axes
    if train_log:
        ax_loss.plot([r["step"] for r in train_log], [r["loss"] for r in train_log], label="train loss")
    if evals:
        steps = [r["step"] for r in evals]
        ax_loss.plot(steps, [r["loss"] for r in evals], "o-", label="validation loss")
        ax_acc.plot(steps, [r["accuracy"] for r in evals], "o-", color="tab:green", label="validation accuracy")
    _label(ax_loss, "fine-tuning: loss", "loss")
    _label(ax_acc, "fine-tuning: validation accuracy", "accuracy")
    _pretrain_panel(ax_pre, pretrain)
    offset = (pretrain or {}).get("steps", 0)
    logs = [((pretrain or {}).get("train_log") or [], 0), (train_log, offset)]
    gpu = (info or {}).get("device") == "cuda"
    panels = (
        ("peak_memory_mib", f"peak memory per rank ({'CUDA allocator' if gpu else 'RSS'})", "MiB"),
        (
            "utilization_pct",
            "GPU utilisation per rank (NVML)" if gpu else "CPU per rank (process; 100% = one core)",
            "%",
        ),
        ("samples_per_s", "samples/s per rank", "examples/s"),
    )
    for ax, (key, title, unit) in zip(resource_axes, panels):
        _per_rank(ax, logs, key)
        if offset:
            ax.axvline(offset + 0.5, color="grey", linestyle=":", label="fine-tuning starts")
        _label(ax, title, unit, "optimizer step (pretraining, then fine-tuning)" if offset else None)
    fig.tight_layout()
    return fig


def _per_rank(ax, logs, key: str) -> None:
    series: dict[int, tuple[list, list]] = {}
    for log, offset in logs:
        for entry in log:
            for row in entry.get("ranks") or []:
                if row.get(key) is not None:
                    xs, ys = series.setdefault(row["rank"], ([], []))
                    xs.append(entry["step"] + offset)
                    ys.append(row[key])
    for rank, (xs, ys) in sorted(series.items()):
        ax.plot(xs, ys, ".-", label=f"rank {rank}")


def _pretrain_panel(ax, pretrain: dict | None) -> None:
    if not pretrain or not pretrain.get("train_log"):
        ax.text(0.5, 0.5, "no pretraining phase", ha="center", va="center", transform=ax.transAxes)
        ax.set_title("pretraining (masked language model)")
        return
    log = pretrain["train_log"]
    ax.plot([r["step"] for r in log], [r["loss"] for r in log], label="MLM train loss")
    evals = pretrain.get("evals") or []
    if evals:
        ax.plot([r["step"] for r in evals], [r["loss"] for r in evals], "o-", label="MLM validation loss")
        twin = ax.twinx()
        twin.plot(
            [r["step"] for r in evals],
            [r["accuracy"] for r in evals],
            "s--",
            color="tab:green",
            label="masked-token accuracy",
        )
        twin.set_ylabel("masked-token accuracy")
        twin.legend(loc="center right")
    _label(ax, "pretraining (masked language model)", "loss")


def _label(ax, title: str, ylabel: str, xlabel: str | None = None) -> None:
    ax.set_title(title)
    ax.set_xlabel(xlabel or "optimizer step")
    ax.set_ylabel(ylabel)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
