"""train/run.py's exits, in process with a stand-in accelerator (found by a hostile read of the one-function run):
a SIGTERM met while a failure is being said together still ends the rank as preempted (exit 75, the marker), and
a run that fails before training leaves an earlier run's pretrain phase where it was."""

import types

import pytest

import train.run as run_module
from train import EXIT_CONFIG, EXIT_PREEMPTED, EXIT_WORLD_CHECK, accumulation, insight, precision, preempt, pretrain
from train import world_check


class Accelerator:
    is_main_process = is_local_main_process = True
    num_processes, process_index = 2, 0
    state = types.SimpleNamespace()

    def __init__(self, barrier=lambda: None):
        self.barrier = barrier

    def wait_for_everyone(self):
        self.barrier()

    def end_training(self):
        pass


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(insight, "world_formed", lambda acc: None)
    monkeypatch.setattr(world_check, "check", lambda acc, model=None: None)
    monkeypatch.setattr(preempt.Preemption, "install", lambda self: None)
    return monkeypatch


def args_for(out):
    return types.SimpleNamespace(seed=0, grad_accum=None, output_dir=str(out), pretrain_steps=0, pretrain_epochs=0,
                                 batch_size=8, model="bert-tiny", resume="auto")


def test_a_sigterm_in_a_failures_barrier_ends_the_rank_preempted(stand_in, tmp_path):
    def sigterm_meanwhile():
        raise preempt.Preempted("SIGTERM")   # the others stopped; this rank waits in _fail's barrier

    def refuse(*a, **k):
        raise accumulation.AccumulationError("grad_accum 3 does not divide the batch")

    stand_in.setattr(run_module, "make_accelerator", lambda args: Accelerator(sigterm_meanwhile))
    stand_in.setattr(accumulation, "resolve", refuse)
    assert run_module.run(args_for(tmp_path)) == EXIT_PREEMPTED
    assert (tmp_path / preempt.MARKER).is_file()


def test_a_broken_world_in_a_failures_barrier_after_a_sigterm_is_preempted_too(stand_in, tmp_path):
    live = {}

    def broken():
        live["preemption"].terminate = True      # SIGTERM arrived, then the collective failed
        raise RuntimeError("Connection closed by peer")

    real_init = preempt.Preemption.__init__

    def keep(self, *a, **k):
        real_init(self, *a, **k)
        live["preemption"] = self

    stand_in.setattr(preempt.Preemption, "__init__", keep)
    stand_in.setattr(run_module, "make_accelerator", lambda args: Accelerator(broken))
    stand_in.setattr(accumulation, "resolve", lambda *a: (_ for _ in ()).throw(accumulation.AccumulationError("x")))
    assert run_module.run(args_for(tmp_path)) == EXIT_PREEMPTED


def test_a_config_failure_says_its_line_and_exits_with_its_code(stand_in, tmp_path, capsys):
    stand_in.setattr(run_module, "make_accelerator", lambda args: Accelerator())
    stand_in.setattr(accumulation, "resolve", lambda *a: (_ for _ in ()).throw(accumulation.AccumulationError("x")))
    assert run_module.run(args_for(tmp_path)) == EXIT_CONFIG
    assert capsys.readouterr().err == "config error: x\n"


def test_a_run_failing_before_training_keeps_an_earlier_pretrain_phase(stand_in, tmp_path):
    phase = pretrain.directory(tmp_path)
    phase.mkdir(parents=True)
    (phase / pretrain.FINISHED).write_text("{}")

    def refuse(*a, **k):
        raise precision.PrecisionError("precision: bf16 asked but the forward ran in fp32")

    stand_in.setattr(run_module, "make_accelerator", lambda args: Accelerator())
    stand_in.setattr(accumulation, "resolve", lambda g, acc: 1)
    stand_in.setattr(run_module, "load_data", lambda args, acc: (None, None, {"validation": None}))
    stand_in.setattr(run_module, "same_pipeline", lambda *a: None)
    stand_in.setattr(run_module, "build_classifier", lambda *a: (object(), {}))
    stand_in.setattr(run_module, "_decide_resume", lambda *a: (True, True, None))   # owner, shared, fresh start
    stand_in.setattr(run_module, "build_trainer", refuse)
    assert run_module.run(args_for(tmp_path)) == EXIT_WORLD_CHECK
    assert (phase / pretrain.FINISHED).is_file()
