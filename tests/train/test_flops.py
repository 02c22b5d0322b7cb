import pytest

from train import flops, model


@pytest.mark.slow
def test_dense_flops_match_the_real_model():
    net = model.build_model("mini", num_labels=2, vocab_size=500, max_length=64)
    c = net.config
    # Weight matrices outside the embeddings: what 6N counts (biases and LayerNorms are noise at this scale).
    dense = sum(p.numel() for name, p in net.named_parameters() if p.dim() == 2 and "embeddings" not in name)
    assert flops.train_flops_per_token(c.hidden_size, c.num_hidden_layers, c.intermediate_size, 0, 2) == 6 * dense


def test_attention_term_grows_with_sequence_length():
    short = flops.train_flops_per_token(768, 12, 3072, 64)
    long = flops.train_flops_per_token(768, 12, 3072, 128)
    assert long - short == 12 * 12 * 768 * 64
    assert 5.2e8 < long < 5.4e8  # BERT-base at 128 tokens: ~0.53 GFLOPs per trained token


@pytest.mark.parametrize("name,tflops", [("NVIDIA H200", 989.4), ("NVIDIA H100 80GB HBM3", 989.4),
                                         ("NVIDIA H100 PCIe", 756.0), ("NVIDIA A100-SXM4-80GB", 312.0),
                                         ("NVIDIA A10G", 70.0), ("Mystery GPU", None), (None, None)])
def test_peak_by_device_name(monkeypatch, name, tflops):
    monkeypatch.delenv(flops.PEAK_ENV, raising=False)
    assert flops.peak_flops(name) == (None if tflops is None else pytest.approx(tflops * 1e12))


def test_peak_override_and_mfu(monkeypatch):
    monkeypatch.setenv(flops.PEAK_ENV, "100")
    assert flops.peak_flops("Mystery GPU") == 1e14
    # 1e9 FLOPs per token at 25,000 tokens/s on each of 2 GPUs of 100 TFLOPS: 25% MFU.
    assert flops.mfu(1e9, 50_000, 2, "Mystery GPU") == pytest.approx(0.25)
    assert flops.mfu(1e9, 0, 2, "Mystery GPU") is None
