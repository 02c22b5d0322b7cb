"""Reading node logs in bounded memory: the last N (kept) lines read backwards in blocks equal what a whole read
gives, across block edges, long lines, a last line without its newline, a filter, and a byte limit."""

import random

import pytest

from launcher.supervise import log_tail


def _naive(text: str, n: int, keep=None) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln for ln in lines if keep is None or keep(ln)][-n:]


@pytest.mark.parametrize("seed", range(12))
def test_the_last_lines_are_those_of_a_whole_read(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(log_tail, "BLOCK", 64)   # many block edges in a small file
    rng = random.Random(seed)
    lines = ["".join(rng.choice("ab é\r") for _ in range(rng.choice([0, 1, 5, 63, 64, 65, 200])))
             for _ in range(rng.randint(0, 60))]
    text = "\n".join(lines) + rng.choice(["", "\n"])
    path = tmp_path / "node0.log"
    path.write_text(text, encoding="utf-8")
    keep = (lambda ln: "a" in ln) if seed % 2 else None
    for n in (1, 3, 20, 1000):
        assert log_tail.last_lines(str(path), n, keep) == _naive(text, n, keep), (n, text)
    assert list(log_tail.lines_of(str(path))) == _naive(text, 10 ** 6)
    size = len(text.encode())
    cut = log_tail.complete_end(str(path), size)
    assert cut == (text.encode().rfind(b"\n") + 1)
    assert log_tail.last_lines(str(path), 5, upto=cut) == _naive(text.encode()[:cut].decode(), 5)
