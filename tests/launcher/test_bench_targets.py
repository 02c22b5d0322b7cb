"""Benchmarks report a missed target through their exit code (they used to print FAIL and exit 0), and
`make bench` runs every one of them. The measurements are replaced by fixed figures: nothing heavy runs here."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kit_seconds, code", [(0.5, 1), (0.05, 0)])
def test_cli_latency_exit_code_follows_the_target(monkeypatch, capsys, kit_seconds, code):
    bench = load("cli_latency")
    monkeypatch.setattr(bench, "median_of", lambda argv, cwd, repeat: 1.0 if "accelerate" in argv[0] else kit_seconds)
    monkeypatch.setattr(sys, "argv", ["cli_latency.py"])
    assert bench.main() == code
    assert ("FAIL" in capsys.readouterr().out) == bool(code)


@pytest.mark.parametrize("ratio, code", [(0.5, 1), (0.99, 0)])
def test_train_overhead_exit_code_follows_the_target(monkeypatch, ratio, code):
    bench = load("train_overhead")
    monkeypatch.setattr(bench, "overhead", lambda steps, rounds, cache: ratio)
    monkeypatch.setattr(sys, "argv", ["train_overhead.py", "--skip-scaling"])
    assert bench.main() == code


@pytest.mark.parametrize("sized, code", [(1.0, 1), (4.0, 0)])
def test_local_threads_exit_code_follows_the_target(monkeypatch, tmp_path, capsys, sized, code):
    bench = load("local_threads")
    rate = {"sized": sized, "default": 2.0}
    monkeypatch.setattr(bench, "run_once", lambda tmp, variant, i: {"steps_per_s": rate[variant], "threads": 1})
    monkeypatch.setattr(sys, "argv", ["local_threads.py", "--rounds", "1"])
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "kit-home"))   # main() points it at its own directory: restored
    assert bench.main() == code
    assert f"ratio sized/default: {sized / 2:.2f}x" in capsys.readouterr().out


@pytest.mark.parametrize("cost_us, code", [(5000.0, 1), (3.0, 0)])
def test_insight_overhead_exit_code_follows_the_target(monkeypatch, capsys, cost_us, code):
    bench = load("insight_overhead")
    monkeypatch.setattr(bench, "instrumentation_us", lambda: cost_us)

    class Loop:   # the trainer: never trained here (chunk_steps_per_s gives 5 steps/s, on and off alike)
        def __init__(self, *a, **k):
            pass
    monkeypatch.setattr(bench, "chunk_steps_per_s", lambda trainer, steps, on: (5.0, 5.0))
    import train.run
    monkeypatch.setattr(train.run, "make_accelerator", lambda args: None)
    monkeypatch.setattr(train.run, "load_data", lambda args, acc: ((), None, None))
    monkeypatch.setattr(train.run, "build_trainer", lambda *a: Loop())
    monkeypatch.setattr(sys, "argv", ["insight_overhead.py", "--pairs", "2"])
    assert bench.main() == code
    assert ("FAIL" in capsys.readouterr().out) == bool(code)


def test_make_bench_runs_every_benchmark_and_fails_on_a_miss():
    recipe = (ROOT / "Makefile").read_text().split("\nbench:", 1)[1].split("\n\n", 1)[0]
    for name in ("cli_latency", "train_overhead", "local_threads", "env_check", "insight_overhead"):
        assert name in recipe
    assert "status=1" in recipe and "exit $$status" in recipe
