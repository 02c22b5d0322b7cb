"""The notes libraries print on every CPU run stay off the terminal (the node log keeps them); nothing a rank says
about its own work is taken for one."""

import pytest

from launcher.render.shell import threads_lines
from launcher.supervise.noise import NoiseFilter
from launcher.supervise.failure import summarize

NOTES = [
    "[node0/rank0] [2026-12-05 07:27:04,896] [WARNING] [real_accelerator.py:213:get_accelerator] Setting accelerator"
    " to CPU. If you have GPU or other accelerator, we were unable to detect it.",
    "[node0/rank1] [2026-12-05 07:27:04,101] [INFO] [real_accelerator.py:203:get_accelerator] Setting "
    "ds_accelerator to cpu (auto detect)",
    "[node1/rank2] [W1205 07:27:04.123456789 socket.cpp:752] [c10d] The hostname of the client socket cannot be "
    "retrieved. err=-3",
    "[node0] The following values were not passed to `accelerate launch` and had defaults used instead:",
    "[node0] \t`--num_cpu_threads_per_process` was set to `2` to improve out-of-box performance when training on CPUs",
    "[node0] To avoid this warning pass in values for each of the problematic parameters or run `accelerate config`.",
    "[node0] \t`--dynamo_backend` was set to a value of `'no'`",
]
KEPT = [
    "[node0/rank0] \t`--lr` was set to `3` by my own script",   # accelerate's shape, but a rank's own line
    "[node0/rank0] step 3/3 epoch 0 loss 0.7018 lr 0.00e+00",
    "[node0/rank0] [2026-12-05 07:27:04,896] [WARNING] [engine.py:10:step] gradient overflow, skipping step",
    "[node0/rank1] [W1205 07:27:04.123 socket.cpp:752] [c10d] Connection to 10.0.0.1:29500 refused",
    "[node0] my own launcher line",
]


@pytest.mark.parametrize("line", NOTES)
def test_a_library_note_is_kept_off_the_console(line):
    assert NoiseFilter().feed(line) == []


@pytest.mark.parametrize("line", KEPT)
def test_other_lines_are_shown(line):
    assert NoiseFilter().feed(line) == [line]


def test_a_failure_line_is_never_a_library_note_when_the_rank_said_something():
    from tests.supervise.test_failure import TORCHRUN_FAILURE
    note = NOTES[0].replace("node0/rank0", "node1/rank1")
    log = TORCHRUN_FAILURE.replace("[node1/rank1] bad data", f"{note}\n[node1/rank1] bad data")
    log = log.replace("(columns: a, b)\n", f"(columns: a, b)\n{note}\n")
    assert summarize(1, "h", 1, log).last_line == "bad data: /data/x.csv:1: missing column 'text' (columns: a, b)"
    untagged = "ValueError: bad label 7\n" + NOTES[0].removeprefix("[node0/rank0] ") + "\n"
    assert summarize(0, "h", 1, untagged).last_line == "ValueError: bad label 7"


def test_threads_are_sized_on_the_node_from_its_own_cores(tmp_path):
    import subprocess
    script = "\n".join([*threads_lines(2), 'echo "$OMP_NUM_THREADS"'])
    env = {"PATH": "/usr/bin:/bin"}
    cores = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env).stdout.strip()
    assert out == str(max(1, cores // 2))
    pinned = subprocess.run(["taskset", "-c", "0", "bash", "-c", script], capture_output=True, text=True,
                            env=env).stdout.strip()
    assert pinned == "1"   # one core allowed (as a SLURM task's allocation): one thread, never zero
    given = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                           env={**env, "OMP_NUM_THREADS": "7"}).stdout.strip()
    assert given == "7"
