"""sweep.png: every trial visible and named (equal results share a dot, named together), redrawn only when what
it shows changed."""

import os

import pytest

from launcher.sweeps import plot

pytest.importorskip("matplotlib")


class _Record:
    def __init__(self, path, parameters):
        self.path, self.parameters = str(path), parameters

    def read(self):
        return {"spec": {"parameters": self.parameters}}

    def file(self, name):
        return os.path.join(self.path, name)


def _view(metrics):
    trials = [{"index": i, "run_id": f"s-t{i}", "params": {"--lr": lr, "--opt": opt}, "metric": m}
              for i, (lr, opt, m) in enumerate(metrics)]
    return {"sweep_id": "s", "metric": "accuracy", "goal": "max", "parameters": ["--lr", "--opt"],
            "trials": trials, "best": "s-t0"}


def test_equal_results_are_named_together_and_the_plot_is_drawn_once(tmp_path, monkeypatch, capsys):
    record = _Record(tmp_path, {"--lr": [0.1, 0.01], "--opt": ["adam", "sgd"]})
    view = _view([(0.1, "adam", 0.5), (0.1, "adam", 0.5), (0.01, "sgd", 0.7)])
    labels = []
    real = plot._label

    def spy(ax, xs, points):
        real(ax, xs, points)
        labels.extend(t.get_text() for t in ax.texts)
    monkeypatch.setattr(plot, "_label", spy)
    plot.write_plot(record, view)
    assert sorted(labels) == ["t0,t1", "t0,t1", "t2", "t2"]   # two panels, each trial named
    png = tmp_path / plot.PNG
    assert png.read_bytes()[:4] == b"\x89PNG" and capsys.readouterr().err == f"kit: plot: {png}\n"
    drawn = png.stat().st_mtime_ns
    plot.write_plot(record, view)
    assert png.stat().st_mtime_ns == drawn and capsys.readouterr().err == f"kit: plot: {png} (unchanged)\n"
    view["trials"][2]["metric"] = 0.8
    plot.write_plot(record, view)
    assert capsys.readouterr().err == f"kit: plot: {png}\n"
