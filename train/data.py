"""Loading, validating and splitting labelled text data (CSV, TSV, JSONL or the built-in corpus).

Every rank computes the same split: it depends only on the data and the seed.  Errors name file and line, and
are raised before anything is trained.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from train import corpus


class DataError(ValueError):
    """Bad input data; the message names the file and, where it applies, the line."""


@dataclass(frozen=True)
class Example:
    text: str
    label: str  # labels are kept as strings until the label vocabulary is fixed
    source: str  # "file:line", for error messages


@dataclass(frozen=True)
class Splits:
    train: list[Example]
    validation: list[Example]
    test: list[Example]
    labels: list[str]  # label id -> name
    fingerprint: str  # identifies data + split; part of the tokenizer/cache keys

    def label_ids(self, examples: list[Example]) -> list[int]:
        index = {name: i for i, name in enumerate(self.labels)}
        out = []
        for ex in examples:
            if ex.label not in index:
                raise DataError(
                    f"{ex.source}: label {ex.label!r} does not occur in the training split "
                    f"(known labels: {', '.join(self.labels)})"
                )
            out.append(index[ex.label])
        return out


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if not raw.strip():
        raise DataError(f"{path}: file is empty")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(f"{path}:{line}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _lines(text: str) -> list[str]:
    # Records end at "\n" only: str.splitlines would also cut at form feeds, U+0085, U+2028 and U+2029, which
    # are valid inside a JSON string written with ensure_ascii=False (and inside review text).
    return [line.removesuffix("\r") for line in text.split("\n")]


def _label_str(value, where: str) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict, float)):
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        raise DataError(f"{where}: label must be a name or an integer, got {value!r}")
    return str(value).strip()


def _make(text, label, where: str) -> Example:
    if not isinstance(text, str):
        raise DataError(f"{where}: text must be a string, got {type(text).__name__}")
    label = _label_str(label, where)
    for name, value in (("text", text), ("label", label)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # a JSON escape such as "\ud800" decodes to a lone surrogate
            raise DataError(
                f"{where}: {name} holds a lone surrogate {value[exc.start]!r} at character {exc.start}, "
                f"not valid Unicode (a half of a UTF-16 pair?); fix or drop that line"
            ) from None
    if not label:
        raise DataError(f"{where}: empty label")
    return Example(text=text, label=label, source=where)


def _read_delimited(path: Path, delimiter: str, text_col: str, label_col: str) -> list[Example]:
    # The csv module does its own record splitting: it must see the raw line endings (newline=""), so that a
    # quoted field keeps its newlines and may hold any other character.
    reader = csv.reader(io.StringIO(_read_text(path), newline=""), delimiter=delimiter)
    try:
        header = next(reader, [])
        for col in (text_col, label_col):
            if col not in header:
                raise DataError(f"{path}:1: missing column {col!r} (header has: {', '.join(header)})")
        return _delimited_rows(path, reader, header.index(text_col), header.index(label_col))
    except csv.Error as exc:
        raise DataError(f"{path}:{reader.line_num}: {exc}") from None


def _delimited_rows(path: Path, reader, text_at: int, label_at: int) -> list[Example]:
    out = []
    start = reader.line_num + 1  # physical line where the next record begins (a record may span lines)
    for row in reader:
        where = f"{path}:{start}"
        start = reader.line_num + 1
        if not row:
            continue  # a blank line
        if len(row) <= max(text_at, label_at):
            raise DataError(f"{where}: row has fewer fields than the header")
        out.append(_make(row[text_at], row[label_at], where))
    return out


def _read_jsonl(path: Path, text_col: str, label_col: str) -> list[Example]:
    out = []
    for number, line in enumerate(_lines(_read_text(path)), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a JSON object")
        for col in (text_col, label_col):
            if col not in row:
                raise DataError(f"{where}: missing column {col!r}")
        out.append(_make(row[text_col], row[label_col], where))
    return out


def _read_corpus() -> list[Example]:
    out = []
    for label, path in corpus.corpus_files().items():
        for number, line in enumerate(_lines(_read_text(path)), start=1):
            if line.strip():  # the files end with an empty line
                out.append(Example(text=line.strip(), label=label, source=f"{path}:{number}"))
    return out


def read_examples(source: str, text_col: str, label_col: str) -> list[Example]:
    """All examples of a data source: the built-in corpus name or a .csv/.tsv/.jsonl file."""
    if source == corpus.CORPUS_NAME:
        return _read_corpus()
    path = Path(source)
    if not path.is_file():
        raise DataError(f"{path}: no such data file (or use --data {corpus.CORPUS_NAME})")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        examples = _read_delimited(path, ",", text_col, label_col)
    elif suffix == ".tsv":
        examples = _read_delimited(path, "\t", text_col, label_col)
    elif suffix in (".jsonl", ".json"):
        examples = _read_jsonl(path, text_col, label_col)
    else:
        raise DataError(f"{path}: unknown data format {suffix!r} (use .csv, .tsv or .jsonl)")
    if not examples:
        raise DataError(f"{path}: no examples (header only?)")
    return examples


def dedupe(examples: list[Example]) -> list[Example]:
    """Keep the first occurrence of each text: duplicates across splits would leak test data into training."""
    seen: set[str] = set()
    out = []
    for ex in examples:
        if ex.text not in seen:
            seen.add(ex.text)
            out.append(ex)
    return out


def _sorted_labels(names: set[str]) -> list[str]:
    # Integer labels keep their numeric order so that 0..K-1 map to themselves.
    if all(n.lstrip("-").isdigit() for n in names):
        return sorted(names, key=int)
    return sorted(names)


def _fingerprint(examples: list[Example], seed: int, fractions: tuple[float, float]) -> str:
    h = hashlib.sha256(f"{seed}|{fractions}|".encode())
    for ex in examples:
        h.update(ex.label.encode() + b"\t" + ex.text.encode() + b"\n")
    return h.hexdigest()[:16]


def split(examples: list[Example], seed: int, val_fraction: float, test_fraction: float) -> Splits:
    """A seeded permutation cut into train/validation/test; identical on every rank."""
    if len(examples) < 3:
        raise DataError(f"need at least 3 examples to split, got {len(examples)}")
    order = np.random.default_rng(seed).permutation(len(examples))
    n_test = max(1, round(len(examples) * test_fraction))
    n_val = max(1, round(len(examples) * val_fraction))
    shuffled = [examples[i] for i in order]
    test, val, train = shuffled[:n_test], shuffled[n_test : n_test + n_val], shuffled[n_test + n_val :]
    labels = _sorted_labels({ex.label for ex in train})
    splits = Splits(train, val, test, labels, _fingerprint(examples, seed, (val_fraction, test_fraction)))
    splits.label_ids(val)  # fail now, before training, on labels the model could never predict
    splits.label_ids(test)
    return splits


def require_one_batch(splits: Splits, batch_size: int, processes: int, unit: str = "processes") -> None:
    """Every process must get at least one full training batch per epoch (the remainder is dropped): a smaller
    training split is refused here, before anything is built, not met as a crash or an empty epoch in the loop."""
    needed = batch_size * processes
    if len(splits.train) < needed:
        each = f" on each of {processes} {unit}" if processes > 1 else ""
        raise DataError(
            f"training split: {len(splits.train)} examples, fewer than one batch of {batch_size}{each} "
            f"({needed} examples); lower --batch-size or give more data"
        )


def load_splits(
    source: str,
    text_col: str,
    label_col: str,
    seed: int,
    val_fraction: float,
    test_fraction: float,
    deduplicate: bool = True,
) -> Splits:
    examples = read_examples(source, text_col, label_col)
    if deduplicate:
        examples = dedupe(examples)
    return split(examples, seed, val_fraction, test_fraction)
