"""SIGTERM is honoured in every phase: outside the training loop it stops a rank at once (exit 75), and during the
final write it lets the write finish first; a launcher's teardown never has to escalate to SIGKILL."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.train.launch import REPO, kit_submit_argv
from tests.train.support import by_hand_env, resumable_args, synthetic_rows, train_by_hand, write_csv
from train import EXIT_PREEMPTED, preempt, resume


@pytest.fixture
def preemption():
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    p = preempt.Preemption()
    p.install()
    yield p
    for s, handler in old.items():
        signal.signal(s, handler)


def test_outside_the_loop_sigterm_raises_at_once(preemption):
    with pytest.raises(preempt.Preempted):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # interrupted: the handler raises
    os.kill(os.getpid(), signal.SIGUSR1)  # "time is nearly up": noted, the run may still finish
    assert preemption.requested


def test_a_second_sigterm_does_not_interrupt_the_reaction_to_the_first(preemption, tmp_path):
    # A teardown signals every process of the node, and torchrun's agent forwards its own SIGTERM: a rank may
    # get two. The second must not abort the first one's marker write (seen in CI: no "preempted by" line).
    with pytest.raises(preempt.Preempted):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    os.kill(os.getpid(), signal.SIGTERM)   # arrives while the rank reacts: noted, not raised
    time.sleep(0.05)
    preempt.write_marker(tmp_path, 3, None, preemption.signal_name)
    assert json.loads((tmp_path / preempt.MARKER).read_text())["signal"] == "SIGTERM"
    assert preemption.terminate


def test_in_the_loop_it_is_a_flag_and_a_critical_write_finishes(preemption):
    with preemption.deferred():
        os.kill(os.getpid(), signal.SIGTERM)
    assert preemption.terminate  # acted on by the loop at the next optimizer step
    fresh = preempt.Preemption()
    fresh.install()
    written = []
    with pytest.raises(preempt.Preempted):
        with fresh.critical():
            os.kill(os.getpid(), signal.SIGTERM)
            written.append("model")
    assert written == ["model"]


def _start(argv: list[str], env: dict, cwd) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    return proc, lines


def _stop_in_phase(proc, lines, phase: str, timeout: float = 240) -> float:
    """Wait for the phase line, SIGTERM the process, return the seconds it took to exit."""
    deadline = time.monotonic() + timeout
    while not any(line.startswith(f"{phase}: ") or f"] {phase}: " in line for line in list(lines)):
        assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)[-4000:]
        time.sleep(0.2)
    time.sleep(0.5)  # every rank is now inside the phase
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    return time.monotonic() - sent


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["test", "save"])
def test_sigterm_in_a_final_phase_stops_promptly_and_the_requeue_finishes(tmp_path, phase):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = resumable_args(data, out, cache, "--max-steps", "3")
    proc, lines = _start([sys.executable, "-m", "train", *args], by_hand_env(**{preempt.HOLD_ENV: phase}), REPO)
    took = _stop_in_phase(proc, lines, phase)
    # Promptly: far inside any launcher's grace period (40 s), with room for a loaded 2-core machine.
    assert proc.returncode == EXIT_PREEMPTED and took < 20, (took, "".join(lines)[-3000:])
    assert not (out / resume.FINISHED).exists()
    assert json.loads((out / preempt.MARKER).read_text())["checkpoint"].endswith("step-3")
    # "save" finishes the write it was in; "test" had nothing written.
    assert (out / "metrics.json").exists() == (phase == "save")
    again = train_by_hand(args)  # the requeue: same job, no flag
    assert again.returncode == 0, again.stderr[-3000:]
    assert (out / resume.FINISHED).exists() and json.loads((out / "metrics.json").read_text())["steps"] == 3


@pytest.mark.slow
def test_kit_teardown_during_the_final_test_needs_no_sigkill(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    out = tmp_path / "out"
    argv = kit_submit_argv(tmp_path, "ddp", resumable_args(data, out, tmp_path / "cache", "--max-steps", "3"),
                           extra_env={preempt.HOLD_ENV: "test"})
    proc, lines = _start(argv, dict(os.environ), tmp_path)
    took = _stop_in_phase(proc, lines, "test")
    text = "".join(lines)
    # kit's grace before SIGKILL is 40 s (at least 30): every rank was gone well before it.
    assert took < 25, (took, text[-4000:])
    assert "preempted by SIGTERM" in text, text[-4000:]
    assert not (out / "metrics.json").exists()
