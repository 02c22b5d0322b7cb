"""The training module's marked lines as kit reads them: recognised with or without a node's tag, parsed with their
node, kept out of a failure's last words, and read back from node logs in chunks (a line across a chunk's end)."""

import json

from launcher.insight import events
from launcher.insight.events import is_insight, parse, read_log_events, record_events
from launcher.supervise.failure import summarize
from train import insight as train_insight


def test_the_mark_is_spelled_the_same_on_both_sides():
    assert events.MARK == train_insight.MARK


def _line(e, tag="[node1/rank1] "):
    return tag + events.MARK + json.dumps(e)


def test_lines_are_recognised_and_parsed_with_their_node():
    e = {"e": "sections", "t": 12.5, "r": 1, "n": 3, "data": 0.1}
    assert is_insight(_line(e)) and is_insight(_line(e, "")) and not is_insight("[node0/rank0] step 3/10")
    assert parse(_line(e)) == {**e, "node": 1}
    assert parse(_line(e, ""), node=4)["node"] == 4
    assert parse("[node0/rank0] kit-insight: {not json") is None
    assert parse(_line({"e": "x", "t": "late"})) is None   # a time is a number


def test_a_marked_line_is_never_a_ranks_last_words():
    log = "\n".join(["[node0/rank0] bad data: row 7", _line({"e": "progress", "t": 1.0, "step": 3}, "[node0/rank0] ")])
    assert summarize(0, "n1", 4, log).last_line == "bad data: row 7"


def test_logs_are_read_in_chunks_from_an_offset(tmp_path, monkeypatch):
    monkeypatch.setattr(events, "CHUNK", 64)   # lines cross every chunk's end
    log = tmp_path / "node1.log"
    lines = [_line({"e": "progress", "t": float(i), "step": i}) if i % 2 else f"[node1/rank1] step {i}"
             for i in range(40)]
    log.write_text("\n".join(lines) + "\n[node1/rank1] half a li")
    got, offset = read_log_events(str(log), 0, node=1)
    assert [e["step"] for e in got] == list(range(1, 40, 2)) and offset == len("\n".join(lines)) + 1
    with open(log, "a") as f:
        f.write("ne\n" + _line({"e": "end", "t": 99.0, "step": 40}) + "\n")
    more, _ = read_log_events(str(log), offset, node=1)
    assert [e["e"] for e in more] == ["end"]
    (tmp_path / "node0.log").write_text(_line({"e": "start", "t": 0.5}, "[node0/rank0] ") + "\n")
    assert [e["e"] for e in record_events(str(tmp_path))][:2] == ["start", "progress"]
