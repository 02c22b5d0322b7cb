"""The heads' weights fitted on validation (train/ngram_mix.py): what the fit finds, and what the model does with
it."""

import torch

from train import model, ngram_mix
from train.ngram_head import char_batch


def _overconfident_and_good(n=2000, seed=0):
    """Labels, an overconfident weak head (right 75%, logits +-8) and a calibrated strong one (right 88%)."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=gen)
    sign = lambda right: torch.where(right, 1.0, -1.0) * torch.where(labels == 1, 1.0, -1.0)   # noqa: E731
    weak = sign(torch.rand(n, generator=gen) < 0.75) * 8.0
    strong = sign(torch.rand(n, generator=gen) < 0.88) * (0.5 + torch.rand(n, generator=gen))
    as_logits = lambda margin: torch.stack([-margin / 2, margin / 2], 1)   # noqa: E731
    return as_logits(weak), as_logits(strong), labels


def test_the_fit_turns_down_an_overconfident_head_and_beats_the_plain_sum():
    deep, wide, labels = _overconfident_and_good()
    a, b = ngram_mix.fit(deep, wide, labels)
    assert 0 < a < b   # the overconfident head counts less

    def accuracy(logits):
        return float((logits.argmax(1) == labels).float().mean())

    assert accuracy(a * deep + b * wide) > accuracy(deep + wide) + 0.05


def test_the_fit_is_the_same_on_every_call_and_finite_on_a_degenerate_split():
    deep, wide, labels = _overconfident_and_good(300, seed=1)
    assert ngram_mix.fit(deep, wide, labels) == ngram_mix.fit(deep.clone(), wide.clone(), labels.clone())
    zeros = torch.zeros(4, 2)   # nothing to fit: any weights do; they stay finite and positive
    a, b = ngram_mix.fit(zeros, zeros, torch.tensor([0, 1, 0, 1]))
    assert 0 < a < 1e6 and 0 < b < 1e6


def test_the_model_weighs_its_heads_by_the_mix_in_its_config(tmp_path):
    torch.manual_seed(0)
    net = model.build_model("tiny", 2, 100, 32, ngram_buckets=1 << 10, skip_ids=(2, 3, 0)).eval()
    torch.nn.init.normal_(net.ngrams.bag.weight)
    ids = torch.tensor([[2, 10, 11, 3], [2, 40, 3, 0]])
    inputs = dict(input_ids=ids, attention_mask=(ids != 0).long(), char_ids=char_batch(["good", "bad"]))
    out = net(**inputs)
    assert torch.allclose(out.logits, out.deep_logits + out.wide_logits)   # before a fit: the plain sum
    net.config.ngram_mix = [0.25, 2.0]
    mixed = net(**inputs)
    assert torch.allclose(mixed.logits, 0.25 * out.deep_logits + 2.0 * out.wide_logits)
    net.save_pretrained(tmp_path / "m")   # the mix is saved with the model: a loaded model predicts with it
    from train.ngram_model import BertWithNgrams

    assert torch.allclose(BertWithNgrams.from_pretrained(tmp_path / "m").eval()(**inputs).logits, mixed.logits)
    # A model trained from it (--model DIR) starts from the plain sum: that mix was fitted to another model.
    again = model.build_model(str(tmp_path / "m"), 2, 0, 0, ngram_buckets=model.NGRAM_BUCKETS).eval()
    assert ngram_mix.weights(again.config) == ngram_mix.SUM
    assert torch.allclose(again(**inputs).logits, out.logits)
