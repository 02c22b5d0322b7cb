import json

from train import checkpoint


def fake_checkpoint(root, step, files=None):
    path = checkpoint.checkpoints_dir(root) / f"step-{step}"
    path.mkdir(parents=True)
    files = files or {"model.safetensors": b"x" * 100, "random_states_0.pkl": b"r" * 10}
    for name, content in files.items():
        (path / name).write_bytes(content)
    manifest = {"step": step, "state": {"step": step}, "files": {n: len(c) for n, c in files.items()}}
    (path / checkpoint.MANIFEST).write_text(json.dumps(manifest))
    return path


def test_latest_complete_checkpoint(tmp_path):
    assert checkpoint.latest(tmp_path) is None
    fake_checkpoint(tmp_path, 5)
    newest = fake_checkpoint(tmp_path, 10)
    assert checkpoint.latest(tmp_path) == newest
    assert checkpoint.read_state(newest) == {"step": 10}


def test_truncated_checkpoint_is_ignored(tmp_path):
    good = fake_checkpoint(tmp_path, 5)
    truncated = fake_checkpoint(tmp_path, 10)
    (truncated / "model.safetensors").write_bytes(b"x" * 40)  # a crash (or a copy) cut the file short
    no_manifest = fake_checkpoint(tmp_path, 15)
    (no_manifest / checkpoint.MANIFEST).unlink()
    missing = fake_checkpoint(tmp_path, 20)
    (missing / "random_states_0.pkl").unlink()
    (checkpoint.checkpoints_dir(tmp_path) / ".tmp-step-25").mkdir()  # a save in progress
    assert checkpoint.latest(tmp_path) == good
    assert checkpoint.resolve_resume("auto", tmp_path) == good
    assert checkpoint.resolve_resume("no", tmp_path) is None


def test_explicit_resume_must_be_complete(tmp_path):
    import pytest

    bad = fake_checkpoint(tmp_path, 3)
    (bad / checkpoint.MANIFEST).write_text("{")
    with pytest.raises(ValueError, match="not a complete checkpoint"):
        checkpoint.resolve_resume(str(bad), tmp_path)
    assert checkpoint.resolve_resume(str(fake_checkpoint(tmp_path, 4)), tmp_path).name == "step-4"


def test_prune_keeps_newest(tmp_path):
    for step in (1, 2, 3):
        fake_checkpoint(tmp_path, step)
    checkpoint.prune(checkpoint.checkpoints_dir(tmp_path), keep=2)
    names = sorted(p.name for p in checkpoint.checkpoints_dir(tmp_path).iterdir())
    assert names == ["step-2", "step-3"]
