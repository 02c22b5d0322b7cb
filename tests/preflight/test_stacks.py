"""Reading py-spy's dumps: the frame a stuck rank is in, for the hang line (preflight/stacks.py)."""

from launcher.preflight.stacks import innermost, parse_dumps

UNNAMED = """Process 31216: python fail.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 31216 (idle)
    <module> (fail.py:8)
"""

NAMED = """Process 40: python -m train
Python v3.11.7 (/usr/bin/python3.11)

Thread 41 (idle): "pin_memory"
    wait (threading.py:327)
Thread 40 (active): "MainThread"
    barrier (torch/distributed/distributed_c10d.py:4159)
    main (train/run.py:88)
"""


def test_the_main_threads_innermost_frame_named_or_not():
    # py-spy names threads only when it can read their names (a script that never imported threading).
    assert innermost(UNNAMED) == "<module> (fail.py:8)"
    assert innermost(NAMED) == "barrier (distributed_c10d.py:4159)"
    assert innermost("no stack: py-spy is not installed next to python\n") is None


def test_dumps_are_split_by_rank():
    out = f"kit-stack:begin 1 77\n{UNNAMED}kit-stack:end\nkit-stack:begin 0 76\n{NAMED}kit-stack:end\n"
    stacks = parse_dumps(out)
    assert sorted(stacks) == [0, 1] and innermost(stacks[1]) == "<module> (fail.py:8)"
