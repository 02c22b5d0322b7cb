"""Tokenizers and the on-disk cache of tokenized splits.

A local pretrained model directory brings its own tokenizer; otherwise a WordPiece vocabulary is built from the
training split (BERT normalisation: every CJK character is its own token), deterministically (train/wordpiece.py).
Both the tokenizer and the tokenized splits are cached under a key made of the data fingerprint and the tokenizer,
written atomically by one process per node (the others wait at a barrier) and reused by later runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from train import ngram_head, wordpiece
from train.data import Splits

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Part of the tokenizer's cache key: a new builder must not reuse what an older one left (before "wp2", the
# library's trainer: a different vocabulary on every node).
BUILDER = "wp2"


def _flat(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(x) for x in rows], dtype=torch.int64)
    offsets = torch.zeros(len(rows) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    return torch.tensor([t for x in rows for t in x], dtype=torch.int32), offsets


@dataclass
class Encoded:
    """One tokenized split: token ids stored flat with offsets (compact, fast to save and load), and the same for
    what the n-gram head reads of each text (train/ngram_head.py: `char_ids`)."""

    ids: torch.Tensor  # int32, all examples concatenated
    offsets: torch.Tensor  # int64, len = n + 1
    labels: torch.Tensor  # int64
    chars: torch.Tensor | None = None  # int32 code points, all examples concatenated
    char_offsets: torch.Tensor | None = None  # int64, len = n + 1

    def __len__(self) -> int:
        return len(self.labels)

    def lengths(self) -> torch.Tensor:
        return self.offsets[1:] - self.offsets[:-1]

    def tokens(self, i: int) -> torch.Tensor:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def text_chars(self, i: int) -> torch.Tensor:
        if self.chars is None or self.char_offsets is None:
            raise ValueError("these encoded splits carry no characters for the n-gram head")
        return self.chars[self.char_offsets[i] : self.char_offsets[i + 1]]

    @classmethod
    def from_lists(cls, ids: list[list[int]], labels: list[int], chars: list[list[int]] | None = None) -> "Encoded":
        flat, offsets = _flat(ids)
        char_flat, char_offsets = _flat(chars) if chars is not None else (None, None)
        return cls(flat, offsets, torch.tensor(labels, dtype=torch.int64), char_flat, char_offsets)


def _atomic_dir(final: Path, write) -> None:
    """Build a directory in a temp sibling and rename it into place; a concurrent builder may win the race.  The
    temp directory goes on any exit: a failed or interrupted build (SIGTERM is train.preempt.Preempted here, a
    BaseException) leaves nothing behind in the cache."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        write(tmp)
        try:
            os.rename(tmp, final)
        except OSError:  # another process (node on a shared file system) renamed first: its copy is identical
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already when renamed


def train_wordpiece(texts: list[str], vocab_size: int, out_dir: Path, cjk: str = "chars") -> None:
    """A BERT WordPiece tokenizer whose vocabulary is built deterministically (train/wordpiece.py): the same texts
    give the same files, byte for byte, on every node and in every run.  `cjk`: "chars" is BERT's recipe (every CJK
    character its own word, so pieces never span two); "words" lets runs of CJK text merge into frequent
    multi-character pieces as any other script does."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=cjk == "chars", lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokens = wordpiece.build_vocab(
        wordpiece.count_words(texts, normalizer, pre_tokenizer), vocab_size, SPECIAL_TOKENS, min_frequency=2
    )
    # A run of CJK text between punctuation is one "word" to WordPiece: the library's default limit (100
    # characters, else the whole run is [UNK]) is for space-separated scripts.
    tok = Tokenizer(
        models.WordPiece(
            {t: i for i, t in enumerate(tokens)},
            unk_token="[UNK]",
            max_input_chars_per_word=100 if cjk == "chars" else 10_000,
        )
    )
    tok.normalizer, tok.pre_tokenizer, tok.decoder = normalizer, pre_tokenizer, decoders.WordPiece()
    tok.add_special_tokens(SPECIAL_TOKENS)  # already ids 0-4: this only marks them special
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    _as_transformers(tok).save_pretrained(str(out_dir))


def _as_transformers(tok):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )


def load_tokenizer(path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def tokenizer_fingerprint(path: Path) -> str:
    h = hashlib.sha256()
    for name in sorted(os.listdir(path)):
        if name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
            h.update(name.encode() + (path / name).read_bytes())
    return h.hexdigest()[:16]


def trained_tokenizer_dir(cache_dir: Path, splits: Splits, vocab_size: int, cjk: str = "chars") -> Path:
    """Train (once) and return the directory of the WordPiece tokenizer for this data, vocabulary size and CJK
    treatment (the key of BERT's own, "chars", is what it was before "words" existed)."""
    suffix = "" if cjk == "chars" else f"-{cjk}"
    final = cache_dir / f"tokenizer-{BUILDER}-{splits.fingerprint}-v{vocab_size}{suffix}"
    if not (final / "tokenizer.json").is_file():
        texts = [ex.text for ex in splits.train]  # training split only: validation/test stay unseen
        _atomic_dir(final, lambda tmp: train_wordpiece(texts, vocab_size, tmp, cjk))
    return final


def encode_splits(cache_dir: Path, splits: Splits, tokenizer_dir: Path, max_length: int) -> dict[str, Encoded]:
    """Tokenized train/validation/test, from the cache or built and cached now."""
    key = (
        f"{splits.fingerprint}-{tokenizer_fingerprint(tokenizer_dir)}-L{max_length}"
        f"-C{ngram_head.CHARS_VERSION}-{ngram_head.MAX_CHARS}"
    )
    final = cache_dir / f"encoded-{key}"
    if not (final / "splits.pt").is_file():
        _atomic_dir(final, lambda tmp: _encode_to(tmp, splits, tokenizer_dir, max_length))
    raw = torch.load(final / "splits.pt", weights_only=True)
    return {name: Encoded(**parts) for name, parts in raw.items()}


def _encode_to(out_dir: Path, splits: Splits, tokenizer_dir: Path, max_length: int) -> None:
    tok = load_tokenizer(tokenizer_dir)
    out = {}
    for name in ("train", "validation", "test"):
        examples = getattr(splits, name)
        ids = tok([ex.text for ex in examples], truncation=True, max_length=max_length)["input_ids"]
        enc = Encoded.from_lists(ids, splits.label_ids(examples), [ngram_head.char_ids(ex.text) for ex in examples])
        out[name] = {
            "ids": enc.ids,
            "offsets": enc.offsets,
            "labels": enc.labels,
            "chars": enc.chars,
            "char_offsets": enc.char_offsets,
        }
    torch.save(out, out_dir / "splits.pt")
