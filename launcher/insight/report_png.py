"""`kit report RUN --png FILE`: the run's timeline drawn (matplotlib, loaded only here): one bar per attempt,
coloured by what each second was spent on, goodput in green."""

from launcher.insight.goodput import BADPUT, TRAINING, UNREPORTED

COLOURS = {
    TRAINING: "#2ca02c",
    "queue": "#c7c7c7",
    "start-up and imports": "#1f77b4",
    "rendezvous": "#17becf",
    "checkpoint restore": "#9467bd",
    "checkpoint save": "#bcbd22",
    "evaluation": "#ff7f0e",
    "progress lost since the last checkpoint": "#d62728",
    "failure detection": "#e377c2",
    "restart": "#8c564b",
    "wrap-up and teardown": "#7f7f7f",
    UNREPORTED: "#dbdbdb",
    "straggler": "#ff9896",
}


def draw(data: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    segments = data["segments"]
    origin = min((s[0] for s in segments), default=0.0)
    rows = sorted({s[3] or 0 for s in segments})
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.5 * len(rows)))
    seen = set()
    for start, end, category, attempt in segments:
        y = rows.index(attempt or 0)
        label = category if category not in seen else None
        seen.add(category)
        ax.barh(
            y, end - start, left=start - origin, color=COLOURS.get(category, "#333333"), label=label, edgecolor="none"
        )
    ax.set_yticks(range(len(rows)), [f"attempt {r}" if r else "kit" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("seconds since submission")
    share = "unknown" if data["goodput"] is None else f"{100 * data['goodput']:.1f}%"
    ax.set_title(f"run {data['run_id']}: goodput {share} of {data['total_s']:.0f} s")
    order = [TRAINING, *BADPUT, UNREPORTED]
    handles, labels = ax.get_legend_handles_labels()
    pairs = sorted(zip(handles, labels), key=lambda hl: order.index(hl[1]) if hl[1] in order else 99)
    ax.legend(
        [h for h, _ in pairs],
        [lb for _, lb in pairs],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.35),
        ncol=3,
        fontsize="small",
        frameon=False,
    )
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


__all__ = ["draw"]
