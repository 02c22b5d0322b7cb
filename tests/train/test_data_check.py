"""The data pipeline check's comparison and its digests (the collective itself: test_data_check_world.py)."""

import os

import torch

from train import data, data_check, tokenizing
from train.data_check import Report

A, B, C = "a" * 64, "b" * 64, "c" * 64


def reports(*rows):
    """(rank, node, host, split, tokenizer, encoded) rows."""
    return [Report(*row) for row in rows]


def test_ranks_that_agree_pass():
    same = reports((0, 0, "n1", A, A, A), (1, 0, "n1", A, A, A), (2, 1, "n2", A, A, A))
    assert data_check.differences(same) == []
    assert data_check.failure(same, "/c", False) is None
    assert data_check.check(same[1], lambda mine: same, "/c", False) is None


def test_a_node_with_another_tokenizer_is_named_in_one_line():
    home = os.path.expanduser("~")
    rows = reports((0, 0, "n1", A, A, A), (1, 1, "n2", A, B, C))
    line = data_check.failure(rows, f"{home}/.cache/kit/train", False)
    assert line == ("world check failed: the data pipeline differs between nodes: tokenizer aaaaaaaaaa on node 0 "
                    "(n1), bbbbbbbbbb on node 1 (n2); delete the cache (~/.cache/kit/train) or give every node the "
                    "same --cache-dir")
    assert data_check.failure(rows, "/scratch/cache", False).endswith("delete the cache (/scratch/cache) or give "
                                                                       "every node the same --cache-dir")
    assert data_check.failure(rows, "/c", True).endswith("; give every node the same --model directory")


def test_encoded_data_is_named_only_when_split_and_tokenizer_agree():
    rows = reports((0, 0, "n1", A, A, A), (1, 1, "n2", A, A, B))
    assert [f for f, _ in data_check.differences(rows)] == ["encoded"]
    assert "encoded data aaaaaaaaaa on node 0 (n1), bbbbbbbbbb on node 1 (n2)" in data_check.failure(rows, "/c",
                                                                                                     False)
    rows = reports((0, 0, "n1", A, A, A), (1, 1, "n2", B, B, B))
    line = data_check.failure(rows, "/c", False)
    assert "split aaaaaaaaaa on node 0 (n1), bbbbbbbbbb on node 1 (n2); tokenizer " in line
    assert "encoded" not in line and line.endswith("; give every node the same --data file")


def test_nodes_that_share_a_value_are_listed_together_and_a_split_node_by_rank():
    rows = reports((0, 0, "n1", A, A, A), (1, 0, "n1", A, A, A), (2, 1, "n2", A, B, A), (3, 1, "n2", A, B, A),
                   (4, 2, "n3", A, A, A), (5, 2, "n3", A, C, A))
    (field, text), = data_check.differences(rows)
    assert field == "tokenizer"
    assert text == ("tokenizer aaaaaaaaaa on node 0 (n1) and rank 4 on node 2 (n3), bbbbbbbbbb on node 1 (n2), "
                    "cccccccccc on rank 5 on node 2 (n3)")
    assert "\n" not in data_check.failure(rows, "/c", False)


def test_node_rank_comes_from_torchrun():
    assert data_check.node_rank(5, {"GROUP_RANK": "2", "LOCAL_WORLD_SIZE": "2"}) == 2
    assert data_check.node_rank(5, {"LOCAL_WORLD_SIZE": "2"}) == 2
    assert data_check.node_rank(0, {}) == 0


def test_digests_see_a_moved_example_swapped_ids_and_a_changed_token(small_csv, tmp_path):
    s = data.load_splits(str(small_csv), "text", "label", 0, 0.1, 0.1)
    moved = data.Splits(s.train[1:], s.validation + s.train[:1], s.test, s.labels, s.fingerprint)
    assert data_check.split_digest(s) == data_check.split_digest(data.load_splits(str(small_csv), "text", "label",
                                                                                  0, 0.1, 0.1))
    assert data_check.split_digest(moved) != data_check.split_digest(s)

    tok = tokenizing.load_tokenizer(tokenizing.trained_tokenizer_dir(tmp_path / "cache", s, 200))

    class Swapped:
        def get_vocab(self):
            vocab = dict(tok.get_vocab())
            vocab["很"], vocab["好"] = vocab["好"], vocab["很"]
            return vocab

    assert data_check.vocab_digest(tok) != data_check.vocab_digest(Swapped())
    assert len(data_check.vocab_digest(tok)) == 64

    enc = tokenizing.Encoded.from_lists([[2, 7, 3], [2, 8, 9, 3]], [0, 1])
    other = tokenizing.Encoded(enc.ids.clone(), enc.offsets, enc.labels)
    assert data_check.encoded_digest({"train": enc}) == data_check.encoded_digest({"train": other})
    other.ids[1] = torch.tensor(6, dtype=torch.int32)
    assert data_check.encoded_digest({"train": enc}) != data_check.encoded_digest({"train": other})
    # The n-gram head's characters are data the ranks must agree on too.
    texts = tokenizing.Encoded.from_lists([[2, 7, 3], [2, 8, 9, 3]], [0, 1], [[97, 98], [99]])
    changed = tokenizing.Encoded.from_lists([[2, 7, 3], [2, 8, 9, 3]], [0, 1], [[97, 98], [100]])
    assert data_check.encoded_digest({"train": texts}) != data_check.encoded_digest({"train": changed})
