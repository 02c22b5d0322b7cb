import torch

from train import model


def test_presets_build_offline():
    for name, cfg in model.PRESETS.items():
        if name == "base":
            continue  # 110M parameters: slow to initialise, same code path
        net = model.build_model(name, num_labels=3, vocab_size=500, max_length=64)
        assert net.config.hidden_size == cfg["hidden_size"] and net.config.num_labels == 3
        assert net.config.vocab_size == 500


def test_local_directory_round_trip(tmp_path):
    net = model.build_model("tiny", num_labels=2, vocab_size=100, max_length=32)
    net.save_pretrained(tmp_path / "m")
    again = model.build_model(str(tmp_path / "m"), num_labels=2, vocab_size=0, max_length=0)
    assert torch.equal(again.classifier.weight, net.classifier.weight)


def test_unknown_model_is_a_clear_error(tmp_path):
    import pytest

    with pytest.raises(ValueError, match="neither a preset"):
        model.build_model(str(tmp_path / "nope"), 2, 100, 32)


def test_no_weight_decay_on_bias_and_layernorm():
    net = model.build_model("tiny", num_labels=2, vocab_size=100, max_length=32)
    decay, no_decay = model.param_groups(net, 0.01)
    names = {id(p): n for n, p in net.named_parameters()}
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert all(names[id(p)].endswith(".bias") or "LayerNorm" in names[id(p)] for p in no_decay["params"])
    assert all(not names[id(p)].endswith(".bias") and "LayerNorm" not in names[id(p)] for p in decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(net.parameters()))


def test_linear_warmup_then_decay():
    """transformers' get_linear_schedule_with_warmup: 0 at step 0, the peak at the end of warmup, 0 at the end."""
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = model.build_scheduler(opt, warmup_steps=4, total_steps=10)
    lrs = []
    for _ in range(10):
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    assert lrs[:5] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert lrs[-1] == 1 / 6 and all(a >= b for a, b in zip(lrs[4:], lrs[5:]))
    assert sched.get_last_lr()[0] == 0.0  # the schedule is exactly total_steps long
