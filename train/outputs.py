"""Files a run leaves in its output directory: metrics.json, classification_report.txt, curves.png."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json(path: Path, data: dict) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def classification_outputs(labels: list[int], preds: list[int], names: list[str]) -> tuple[str, dict]:
    """scikit-learn's per-class precision/recall/F1 report plus the confusion matrix, as text and as data."""
    from sklearn.metrics import classification_report, confusion_matrix

    ids = list(range(len(names)))
    report = classification_report(labels, preds, labels=ids, target_names=names, digits=4, zero_division=0)
    as_dict = classification_report(labels, preds, labels=ids, target_names=names, output_dict=True,
                                    zero_division=0)
    matrix = confusion_matrix(labels, preds, labels=ids).tolist()
    width = max(8, *(len(n) for n in names))
    lines = ["confusion matrix (rows: true label, columns: predicted)",
             " " * width + "".join(f"{n:>{width + 1}}" for n in names)]
    lines += [f"{n:>{width}}" + "".join(f"{c:>{width + 1}}" for c in row) for n, row in zip(names, matrix)]
    text = report + "\n" + "\n".join(lines) + "\n"
    return text, {"report": as_dict, "confusion_matrix": matrix, "labels": names}


def plot_curves(path: Path, train_log: list[dict], evals: list[dict]) -> None:
    """Training loss, validation loss and validation accuracy against the optimizer step."""
    import matplotlib

    matplotlib.use("Agg")  # no display on cluster nodes
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    if train_log:
        ax_loss.plot([r["step"] for r in train_log], [r["loss"] for r in train_log], label="train loss")
    if evals:
        steps = [r["step"] for r in evals]
        ax_loss.plot(steps, [r["loss"] for r in evals], "o-", label="validation loss")
        ax_acc.plot(steps, [r["accuracy"] for r in evals], "o-", color="tab:green", label="validation accuracy")
    ax_loss.set_xlabel("optimizer step")
    ax_loss.set_ylabel("loss")
    ax_loss.legend()
    ax_acc.set_xlabel("optimizer step")
    ax_acc.set_ylabel("accuracy")
    ax_acc.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
