import json
import os
import signal

import pytest

from train import outputs, preempt


@pytest.mark.slow
def test_classification_report_and_confusion_matrix():
    text, data = outputs.classification_outputs([0, 0, 1, 1, 1], [0, 1, 1, 1, 0], ["neg", "pos"])
    assert "precision" in text and "recall" in text and "f1-score" in text
    assert data["confusion_matrix"] == [[1, 1], [1, 2]]
    assert data["report"]["pos"]["precision"] == 2 / 3


def test_curves_png(tmp_path):
    outputs.plot_curves(tmp_path / "c.png", [{"step": 1, "loss": 0.7}, {"step": 2, "loss": 0.6}],
                        [{"step": 2, "loss": 0.65, "accuracy": 0.6}])
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_preempted_marker(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_RUN_ID", "r1")
    preempt.write_marker(tmp_path, 7, tmp_path / "checkpoints" / "step-7", "SIGTERM")
    data = json.loads((tmp_path / preempt.MARKER).read_text())
    assert data == {"step": 7, "checkpoint": str(tmp_path / "checkpoints" / "step-7"), "signal": "SIGTERM",
                    "run_id": "r1"}
    preempt.clear_marker(tmp_path)
    preempt.clear_marker(tmp_path)
    assert not (tmp_path / preempt.MARKER).exists()


def test_signal_sets_the_flag():
    class OneProcess:
        num_processes, process_index = 1, 0

    p = preempt.Preemption()
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    try:
        p.install()
        assert not p.should_stop(OneProcess(), 1)
        os.kill(os.getpid(), signal.SIGUSR1)
        assert p.should_stop(OneProcess(), 2) and p.signal_name == "SIGUSR1"
    finally:
        for s, h in old.items():
            signal.signal(s, h)
