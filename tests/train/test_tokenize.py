import os

from train import data, tokenize


def splits(path):
    return data.load_splits(str(path), "text", "label", 0, 0.1, 0.1)


def test_wordpiece_splits_chinese_characters(small_csv, tmp_path):
    s = splits(small_csv)
    tok_dir = tokenize.trained_tokenizer_dir(tmp_path / "cache", s, 200)
    tok = tokenize.load_tokenizer(tok_dir)
    assert tok.tokenize("这本书很好") == ["这", "本", "书", "很", "好"]
    ids = tok("很好")["input_ids"]
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert tok.pad_token_id == 0 and len(tok) <= 200


def test_tokenizer_and_encoding_are_cached(small_csv, tmp_path, monkeypatch):
    s = splits(small_csv)
    cache = tmp_path / "cache"
    tok_dir = tokenize.trained_tokenizer_dir(cache, s, 200)
    enc = tokenize.encode_splits(cache, s, tok_dir, 16)
    assert len(enc["train"]) == len(s.train) and len(enc["test"]) == len(s.test)
    assert int(enc["train"].lengths().max()) <= 16
    assert enc["train"].labels.tolist() == s.label_ids(s.train)

    def fail(*a, **k):
        raise AssertionError("cache miss")

    monkeypatch.setattr(tokenize, "train_wordpiece", fail)
    monkeypatch.setattr(tokenize, "_encode_to", fail)
    assert tokenize.trained_tokenizer_dir(cache, s, 200) == tok_dir
    again = tokenize.encode_splits(cache, s, tok_dir, 16)
    assert again["validation"].ids.tolist() == enc["validation"].ids.tolist()
    # Only complete entries: no temporary directories left behind.
    assert not [n for n in os.listdir(cache) if n.startswith(".")]


def test_cache_key_changes_with_length_and_data(small_csv, tmp_path):
    s = splits(small_csv)
    cache = tmp_path / "cache"
    tok_dir = tokenize.trained_tokenizer_dir(cache, s, 200)
    tokenize.encode_splits(cache, s, tok_dir, 16)
    tokenize.encode_splits(cache, s, tok_dir, 24)
    other = data.load_splits(str(small_csv), "text", "label", 1, 0.1, 0.1)
    assert tokenize.trained_tokenizer_dir(cache, other, 200) != tok_dir
    assert len([n for n in os.listdir(cache) if n.startswith("encoded-")]) == 2
