"""What the training module tells kit (train/insight.py): nothing unless kit runs it; spans and events from the
main process only; every rank's sections, forward timed inside the model's own forward while it trains (never in
evaluation), the loader's wait timed except an epoch's first batch, reported per step over a report window."""

import json
import os
import subprocess
import sys
import textwrap
import time

import torch

from train import insight
from train.insight import MARK, Insight


def _said(capsys) -> list:
    return [json.loads(ln[len(MARK):]) for ln in capsys.readouterr().out.splitlines() if ln.startswith(MARK)]


def test_silent_unless_kit_runs_it(monkeypatch, capsys):
    monkeypatch.delenv("KIT_RUN_ID", raising=False)
    monkeypatch.delenv("KIT_INSIGHT", raising=False)
    off = Insight()
    off.event("start")
    off.step_done(1)
    assert not off.on and _said(capsys) == []
    monkeypatch.setenv("KIT_RUN_ID", "r")
    assert Insight().on
    monkeypatch.setenv("KIT_INSIGHT", "0")
    assert not Insight().on


def test_spans_and_events_come_from_the_main_process_only(capsys):
    main, other = Insight(0, True, on=True), Insight(1, False, on=True)
    with main.span("restore") as late:
        late["step"] = 7
    with other.span("save", step=3):
        pass
    said = _said(capsys)
    assert [(e["e"], e["step"]) for e in said] == [("restore", 7)] and said[0]["t0"] <= said[0]["t1"]


def test_sections_time_forward_in_training_only_and_skip_an_epochs_first_batch(monkeypatch, capsys):
    monkeypatch.setattr(insight, "REPORT_EVERY_S", 0.05)

    class Slow(torch.nn.Module):
        def forward(self, x):
            time.sleep(0.02)
            return x

    model = Slow()
    ins = Insight(1, False, on=True)
    ins.watch_forward(model, cuda=False)

    def loader():
        for i in range(4):
            time.sleep(0.03 if i == 0 else 0.01)
            yield i

    step = 0
    for batch in ins.batches(loader()):
        model.train()
        model(torch.zeros(1))
        model.eval()
        model(torch.zeros(1))   # evaluation: not timed
        step += 1
        ins.step_done(step)
    time.sleep(0.06)
    ins.step_done(step + 1)
    said = [e for e in _said(capsys) if e["e"] == "sections"]
    assert said and all(e["r"] == 1 and {"w", "from", "to", "n", "data", "forward"} <= set(e) for e in said)
    steps = sum(e["n"] for e in said)
    forward = sum(e["forward"] * e["n"] for e in said) / steps
    data = sum(e["data"] * e["n"] for e in said) / steps
    assert 0.018 < forward * (steps / 4) < 0.04            # four training forwards of 20 ms, none of evaluation
    assert data * steps < 0.03 + 0.01 and data * steps >= 3 * 0.009   # three waits of 10 ms; the first not


def test_sections_say_the_machines_load_and_the_ranks_wait_for_a_cpu(tmp_path, monkeypatch):
    """A rank whose CPU is shared with a busy process (both pinned to one core) reports its node's load and cores,
    the run's threads there, and a wait for a CPU (the kernel's run-queue delay), which kit's straggler line uses."""
    cpu = min(os.sched_getaffinity(0))
    busy = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
    script = textwrap.dedent(f"""
        import os
        from train import insight
        os.sched_setaffinity(0, {{{cpu}}})   # after the imports: the steps share the busy core
        insight.REPORT_EVERY_S = 0.2
        said, emit = [], insight.emit
        insight.emit = lambda event, **fields: (said.append(event), emit(event, **fields))
        ins = insight.Insight(1, False, on=True)
        step = 0
        while len(said) < 2:
            sum(i * i for i in range(20000))   # a step's work, on the shared core
            step += 1
            ins.step_done(step)
    """)
    try:
        env = {**os.environ, "LOCAL_WORLD_SIZE": "2", "OMP_NUM_THREADS": "1"}
        with open(tmp_path / "out", "w") as out:
            subprocess.run([sys.executable, "-c", script], stdout=out, env=env, timeout=120, check=True,
                           cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    finally:
        busy.kill()
        busy.wait()
    said = [json.loads(ln[len(MARK):]) for ln in (tmp_path / "out").read_text().splitlines() if ln.startswith(MARK)]
    assert len(said) == 2 and all(e["e"] == "sections" for e in said)
    last = said[-1]
    assert last["cpus"] == os.cpu_count() and last["load"] >= 0
    assert last["wait"] > 0, last   # the busy process held the core while the rank was runnable
    # A rank has torch imported: the run's threads on the node are its processes there times torch's threads.
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert insight.machine()["threads"] == 2 * torch.get_num_threads()


def test_every_event_names_its_attempt_and_a_loops_events_their_phase(capsys):
    """kit's report gives each event to the attempt that emitted it (issue 39): kit's rendezvous id of a restarted
    attempt (local, SSH), a SLURM job's requeue count; and tells a pretrain phase's loop from fine-tuning's."""
    from launcher.planning.attempt import rdzv_env, rdzv_id

    assert rdzv_id(3) == insight.ATTEMPT_RDZV + "3"
    assert insight.attempt_fields({}) == {"a": 1}
    assert insight.attempt_fields(rdzv_env(2)) == {"a": 2}
    assert insight.attempt_fields({"PET_RDZV_ID": "mine"}) == {"a": 1}   # a user's own rendezvous id
    assert insight.attempt_fields({"SLURM_RESTART_COUNT": "2"}) == {"a": 1, "sr": 2}
    Insight(0, True, on=True, phase="pretrain").event("train", step=0)
    with Insight(0, True, on=True, phase="train").span("save", step=4):
        pass
    said = _said(capsys)
    assert [(e["e"], e["phase"], e["a"]) for e in said] == [("train", "pretrain", 1), ("save", "train", 1)]


def test_a_restarted_attempts_process_says_its_number(tmp_path):
    """The number is read once, from the environment kit gives the attempt's processes."""
    code = "from train import insight; insight.emit('imported')"
    env = {**os.environ, "PET_RDZV_ID": "kit-attempt-2"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert json.loads(out[len(MARK):])["a"] == 2
