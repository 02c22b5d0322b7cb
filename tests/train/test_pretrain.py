"""The pretrain phase (train/mlm.py, train/pretrain.py): deterministic masks, which run continues what, and a
requeued run that stops in either phase ends where an uninterrupted one would."""

import json

import pytest
import torch

from tests.train.launch import run_job
from tests.train.support import resumable_args, synthetic_rows, write_csv
from train import checkpoint, mlm, pretrain, tokenizing
from train.resume import ResumeRefused


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    where = tmp_path_factory.mktemp("tok")
    tokenizing.train_wordpiece([text for text, _ in synthetic_rows(200)], 200, where)
    return tokenizing.load_tokenizer(where)


def _encoded(tokenizer, texts):
    ids = tokenizer(texts, truncation=True, max_length=512)["input_ids"]
    return tokenizing.Encoded.from_lists(ids, [0] * len(ids))


def test_masks_are_a_function_of_seed_epoch_and_example(tokenizer):
    enc = _encoded(tokenizer, ["这本书质量很好物流价格包装服务内容都不错推荐" * 6, "很差"])
    data = mlm.MaskedDataset(enc, tokenizer, 0.15, seed=7)
    first = data[0]
    assert all(torch.equal(a, b) for a, b in zip(first, mlm.MaskedDataset(enc, tokenizer, 0.15, seed=7)[0]))
    data.set_epoch(1)
    assert not torch.equal(data[0][1], first[1])  # another epoch, other tokens to predict
    assert not torch.equal(mlm.MaskedDataset(enc, tokenizer, 0.15, seed=8)[0][1], first[1])
    fixed = mlm.MaskedDataset(enc, tokenizer, 0.15, seed=7, fixed=True)
    before = fixed[0][1]
    fixed.set_epoch(3)
    assert torch.equal(fixed[0][1], before)  # evaluation masks never move


def test_masking_follows_bert(tokenizer):
    enc = _encoded(tokenizer, ["这本书质量很好物流价格包装服务内容都不错推荐" * 20] + ["很差"] * 50)
    data = mlm.MaskedDataset(enc, tokenizer, 0.15, seed=1)
    ids = enc.tokens(0).long()
    inputs, labels = data[0]
    picked = labels != mlm.IGNORE
    assert torch.equal(labels[picked], ids[picked]) and torch.equal(inputs[~picked], ids[~picked])
    assert not picked[0] and not picked[-1]  # [CLS] and [SEP] are never predicted
    assert 0.10 < picked.float().mean() < 0.20
    assert (inputs[picked] == tokenizer.mask_token_id).float().mean() > 0.6  # 80% become [MASK]
    for i in range(1, 51):  # a short example still predicts one token
        assert (data[i][1] != mlm.IGNORE).sum() >= 1


def _finished(where, fp):
    where.mkdir(parents=True)
    (where / pretrain.FINISHED).write_text(json.dumps({"step": 4, "fingerprint": fp, "summary": {"steps": 4}}))


def _checkpoint(where, step, fp):
    path = checkpoint.checkpoints_dir(where) / f"step-{step}"
    path.mkdir(parents=True)
    (path / "model.safetensors").write_bytes(b"x" * 10)
    (path / checkpoint.MANIFEST).write_text(json.dumps({"step": step, "state": {}, "fingerprint": fp,
                                                        "files": {"model.safetensors": 10}}))
    return path


def test_which_pretraining_a_run_continues(tmp_path):
    fp = pretrain.phase_fingerprint({"lr": 0.001, "pretrain_steps": 4})
    assert pretrain.decide("auto", tmp_path / "a", fp) == ("fresh", None)
    path = _checkpoint(pretrain.directory(tmp_path / "b"), 2, fp)
    assert pretrain.decide("auto", tmp_path / "b", fp) == ("resume", str(path))
    assert pretrain.decide("no", tmp_path / "b", fp) == ("fresh", None)
    with pytest.raises(ResumeRefused, match=r"written by a different run \(pretrain_steps 4 -> 8\)"):
        pretrain.decide("auto", tmp_path / "b", {**fp, "pretrain_steps": 8})
    _finished(pretrain.directory(tmp_path / "c"), fp)
    assert pretrain.decide("auto", tmp_path / "c", fp) == ("done", None)
    with pytest.raises(ResumeRefused, match=r"pretraining of a different run \(lr 0.001 -> 0.002\)"):
        pretrain.decide("auto", tmp_path / "c", {**fp, "lr": 0.002})


def _run(tmp_path, data, out, signal_at=None):
    args = resumable_args(data, out, tmp_path / "cache", "--pretrain-steps", "4", "--max-steps", "6",
                          "--save-every", "2", "--log-every", "2", "--no-save-model")
    env = {"KIT_TRAIN_TEST_SIGNAL_AT_STEP": str(signal_at)} if signal_at else None
    return run_job(tmp_path, "ddp", args, extra_env=env)


def _figures(out):
    m = json.loads((out / "metrics.json").read_text())
    return ([(round(e["loss"], 5), round(e["accuracy"], 5)) for e in m["evals"] + m["pretrain"]["evals"]],
            round(m["test"]["loss"], 5), m["pretrain"]["steps"])


@pytest.mark.slow   # two processes through kit, twice: an end-to-end run, not the edit-test loop
def test_a_run_stopped_in_either_phase_resumes_to_the_same_result(tmp_path):
    """Two processes through kit: stopped in pretraining (step 3) it continues the phase from its checkpoint;
    stopped in fine-tuning (step 5) it does not pretrain again.  Both end with the same figures; a finished run is
    then refused before any pretraining."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(160))
    early, late = tmp_path / "early", tmp_path / "late"
    first = _run(tmp_path, data, early, signal_at=3)
    assert first.returncode == 75 and "preempted at pretrain step 3" in first.stdout, first.stdout[-4000:]
    again = _run(tmp_path, data, early)
    assert again.returncode == 0, again.stdout[-4000:]
    assert "pretrain resumed from" in again.stdout and "pretrain/checkpoints/step-3" in again.stdout
    assert "pretrain: done at step 4" in again.stdout

    first = _run(tmp_path, data, late, signal_at=5)
    assert first.returncode == 75 and "preempted at step 5" in first.stdout, first.stdout[-4000:]
    assert (late / "pretrain" / pretrain.ENCODER).is_file()
    again = _run(tmp_path, data, late)
    assert again.returncode == 0, again.stdout[-4000:]
    assert "resumed from" in again.stdout and "pretrain step" not in again.stdout, again.stdout[-4000:]
    assert json.loads((late / "metrics.json").read_text())["pretrain"]["reused"] is True

    assert _figures(early) == _figures(late)
    refused = _run(tmp_path, data, late)
    assert refused.returncode == 5 and "resume refused" in refused.stdout, refused.stdout[-3000:]
    assert "pretrain step" not in refused.stdout
