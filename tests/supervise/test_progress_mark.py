"""One progress mark, spelled three times (kit's tags, the self-contained watchdog, the kit-free training module),
and it survives what torchrun's tee does to a rank's lines."""

import io

from launcher.planning.tags import PROGRESS_MARK, split_progress
from launcher.supervise import watchdog
from train.progress import KIT_PROGRESS_MARK, LineWriter


def test_the_three_spellings_are_the_same_bytes():
    assert PROGRESS_MARK == KIT_PROGRESS_MARK == watchdog.PROGRESS_MARK.decode()


def test_the_mark_survives_text_mode_reading_where_a_carriage_return_splits_the_line(tmp_path):
    # torchrun's tail reads each rank's file with open() in text mode: universal newlines.
    path = tmp_path / "stderr.log"
    stream = io.StringIO()
    LineWriter(stream, prefix=KIT_PROGRESS_MARK).write("\rtrain:  50%|#####     | 1/2\r")
    path.write_text(stream.getvalue() + "\rold style\n")
    with open(path) as f:
        lines = f.readlines()
    assert lines == [KIT_PROGRESS_MARK + "train:  50%|#####     | 1/2\n", "\n", "old style\n"]
    assert split_progress("[node0/rank0] " + lines[0].rstrip("\n")) == ("[node0/rank0] ", "train:  50%|#####     | 1/2")
    assert split_progress("[node0/rank0] old style") is None
    assert watchdog.split_progress(b"[node1] " + lines[0].encode()) == (b"[node1] ", b"train:  50%|#####     | 1/2\n")
