"""kit's console: progress drawn in place on a terminal, thinned off one; a closed terminal stops nothing."""

import io
import os

from launcher.supervise.console import Console, follow_node


class Closed(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def _feed(console, data: bytes, node=0):
    r, w = os.pipe()
    reader = follow_node(r, node, console)
    with os.fdopen(w, "wb") as f:  # blocks on a full pipe unless the reader keeps draining it
        f.write(data)
    reader.join(timeout=5)
    assert not reader.is_alive()


def test_progress_redraws_in_place_on_a_terminal():
    out = io.StringIO()
    console = Console(out, tty=True)
    _feed(console, b"[node0/rank0] \rstep 1/3\n[node0/rank0] \rstep 2/3\n[node0/rank0] loss 0.5\n")
    assert out.getvalue() == ("\r\x1b[K[node0/rank0] step 1/3\r\x1b[K[node0/rank0] step 2/3"
                              "\r\x1b[K[node0/rank0] loss 0.5\n")


def test_progress_is_thinned_off_a_terminal():
    out = io.StringIO()
    console = Console(out, tty=False)
    _feed(console, b"".join(b"[node0/rank0] \rstep %d/50\n" % i for i in range(1, 51)) + b"done\n")
    assert out.getvalue() == "[node0/rank0] step 1/50\n[node0] done\n"


def test_a_closed_console_keeps_draining_the_node():
    console = Console(Closed(), tty=False)
    _feed(console, b"x" * 1_000_000 + b"\nend\n")
    assert console.alive is False  # and follow_node returned: the node's pipe was read to the end
