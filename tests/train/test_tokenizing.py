import os

from train import data, tokenizing
from train.ngram_head import char_ids


def splits(path):
    return data.load_splits(str(path), "text", "label", 0, 0.1, 0.1)


def test_wordpiece_splits_chinese_characters(small_csv, tmp_path):
    s = splits(small_csv)
    tok_dir = tokenizing.trained_tokenizer_dir(tmp_path / "cache", s, 200)
    tok = tokenizing.load_tokenizer(tok_dir)
    assert tok.tokenize("这本书很好") == ["这", "本", "书", "很", "好"]
    ids = tok("很好")["input_ids"]
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert tok.pad_token_id == 0 and len(tok) <= 200


def test_tokenizer_and_encoding_are_cached(small_csv, tmp_path, monkeypatch):
    s = splits(small_csv)
    cache = tmp_path / "cache"
    tok_dir = tokenizing.trained_tokenizer_dir(cache, s, 200)
    enc = tokenizing.encode_splits(cache, s, tok_dir, 16)
    assert len(enc["train"]) == len(s.train) and len(enc["test"]) == len(s.test)
    assert int(enc["train"].lengths().max()) <= 16
    assert enc["train"].labels.tolist() == s.label_ids(s.train)
    # Beside the tokens, what the n-gram head reads of each text: its characters, whole (not cut at 16 tokens).
    assert [enc["test"].text_chars(i).tolist() for i in range(len(s.test))] == [char_ids(ex.text) for ex in s.test]

    def fail(*a, **k):
        raise AssertionError("cache miss")

    monkeypatch.setattr(tokenizing, "train_wordpiece", fail)
    monkeypatch.setattr(tokenizing, "_encode_to", fail)
    assert tokenizing.trained_tokenizer_dir(cache, s, 200) == tok_dir
    again = tokenizing.encode_splits(cache, s, tok_dir, 16)
    assert again["validation"].ids.tolist() == enc["validation"].ids.tolist()
    # Only complete entries: no temporary directories left behind.
    assert not [n for n in os.listdir(cache) if n.startswith(".")]


def test_cache_key_changes_with_length_and_data(small_csv, tmp_path):
    s = splits(small_csv)
    cache = tmp_path / "cache"
    tok_dir = tokenizing.trained_tokenizer_dir(cache, s, 200)
    tokenizing.encode_splits(cache, s, tok_dir, 16)
    tokenizing.encode_splits(cache, s, tok_dir, 24)
    other = data.load_splits(str(small_csv), "text", "label", 1, 0.1, 0.1)
    assert tokenizing.trained_tokenizer_dir(cache, other, 200) != tok_dir
    assert len([n for n in os.listdir(cache) if n.startswith("encoded-")]) == 2


def test_a_cache_of_the_old_nondeterministic_trainer_is_not_reused(small_csv, tmp_path):
    s = splits(small_csv)
    cache = tmp_path / "cache"
    old = cache / f"tokenizer-{s.fingerprint}-v200"  # the key before the deterministic builder
    old.mkdir(parents=True)
    (old / "tokenizer.json").write_text("left by an older kit")
    tok_dir = tokenizing.trained_tokenizer_dir(cache, s, 200)
    assert tok_dir != old and tokenizing.load_tokenizer(tok_dir).tokenize("很好") == ["很", "好"]


def test_two_caches_hold_the_same_tokenizer_and_ids(small_csv, tmp_path):
    s = splits(small_csv)
    a = tokenizing.trained_tokenizer_dir(tmp_path / "node0", s, 200)
    b = tokenizing.trained_tokenizer_dir(tmp_path / "node1", s, 200)
    assert {p.name: p.read_bytes() for p in a.iterdir()} == {p.name: p.read_bytes() for p in b.iterdir()}
    ea, eb = (tokenizing.encode_splits(d.parent, s, d, 16)["train"] for d in (a, b))
    assert ea.ids.tolist() == eb.ids.tolist() and ea.chars.tolist() == eb.chars.tolist()


def test_cjk_words_merge_characters_into_pieces_and_keep_long_runs(small_csv, tmp_path):
    """--cjk words: frequent runs of CJK characters become pieces (as words of other scripts do), under their own
    cache key; a run longer than WordPiece's default word limit (100 characters) is not one [UNK]."""
    s = splits(small_csv)
    chars = tokenizing.trained_tokenizer_dir(tmp_path / "cache", s, 400)
    words = tokenizing.trained_tokenizer_dir(tmp_path / "cache", s, 400, "words")
    assert words != chars and words.name.endswith("-words")
    tok = tokenizing.load_tokenizer(words)
    assert any(len(t.removeprefix("##")) > 1 and "\u4e00" <= t[-1] <= "\u9fff" for t in tok.get_vocab())
    pieces = tok.tokenize("这本书质量很好")
    assert "".join(p.removeprefix("##") for p in pieces) == "这本书质量很好" and len(pieces) < 7, pieces
    long_run = "很好" * 80
    assert tok.unk_token not in tok.tokenize(long_run)
    assert tokenizing.load_tokenizer(chars).tokenize("这本书很好") == ["这", "本", "书", "很", "好"]


def test_an_interrupted_tokenizer_build_leaves_no_temporary_directory(small_csv, tmp_path):
    """SIGTERM while the vocabulary is built (issue 36): the job's preemption handler turns it into Preempted, and
    the build's temporary directory goes with it (it was left in the cache); nothing of the tokenizer is kept."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    cache = tmp_path / "cache"
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from train import data, preempt, tokenizing, wordpiece
        def interrupted(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)
        wordpiece.build_vocab = interrupted
        preempt.Preemption().install()
        s = data.load_splits({str(small_csv)!r}, "text", "label", 0, 0.1, 0.1)
        try:
            tokenizing.trained_tokenizer_dir(__import__("pathlib").Path({str(cache)!r}), s, 200)
        except preempt.Preempted as e:
            sys.exit(f"preempted by {{e.signal_name}}")
    """)
    repo = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.strip() == "preempted by SIGTERM", r.stderr
    assert cache.is_dir() and os.listdir(cache) == []
