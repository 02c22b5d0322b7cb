import io

from train.progress import KIT_PROGRESS_MARK, LineWriter, progress_bar


def test_redraws_become_plain_lines_off_a_terminal():
    sink = io.StringIO()
    w = LineWriter(sink)
    w.write("\rtrain:  10%|#   | 1/10")
    w.write("\r" + " " * 30 + "\r")  # tqdm clearing its line before a message
    w.write("\rtrain:  10%|#   | 1/10")  # the same state redrawn
    w.write("\rtrain:  20%|##  | 2/10\n")
    assert sink.getvalue() == "train:  10%|#   | 1/10\ntrain:  20%|##  | 2/10\n"


def test_bar_in_a_pipe_writes_whole_lines():
    sink = io.StringIO()  # not a terminal, like stderr under accelerate launch
    bar = progress_bar(total=5, initial=0, disable=False, stream=sink)
    for _ in range(5):
        bar.update(1)
    bar.close()
    lines = sink.getvalue().splitlines()
    assert "\r" not in sink.getvalue() and lines and all(line.startswith("train:") for line in lines)
    assert "5/5" in lines[-1]


def test_disabled_on_other_ranks():
    sink = io.StringIO()
    bar = progress_bar(total=5, initial=0, disable=True, stream=sink)
    bar.update(5)
    bar.close()
    assert sink.getvalue() == ""


def test_under_kit_every_redraw_is_a_whole_line_with_kits_mark(monkeypatch):
    monkeypatch.setenv("KIT_PROGRESS", "redraw")
    sink = io.StringIO()
    bar = progress_bar(total=3, initial=0, disable=False, stream=sink)
    for _ in range(3):
        bar.update(1)
    bar.close()
    lines = sink.getvalue().split("\n")[:-1]
    # kit's mark, not "\r": torchrun's tee would split a line at a carriage return (tests/supervise/
    # test_progress_mark.py).
    assert lines and all(line.startswith(KIT_PROGRESS_MARK + "train:") for line in lines)
    assert not any("\r" in line for line in lines)
    assert "3/3" in lines[-1]
