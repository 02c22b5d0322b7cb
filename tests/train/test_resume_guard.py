"""--resume auto continues only this run's own unfinished checkpoint; anything else is one line and exit 5."""

import re
import json
import shutil
from pathlib import Path

import pytest

from tests.train.launch import run_job
from tests.train.support import resumable_args, synthetic_rows, train_by_hand, write_csv
from tests.train.test_checkpoint import fake_checkpoint
from train import EXIT_PREEMPTED, EXIT_RESUME_REFUSED, checkpoint, fingerprint, preempt, resume

FP = {"model": "tiny", "data": "abc", "strategy": "ddp", "world_size": 2, "lr": 0.001, "grad_accum": 1}


def with_fingerprint(path, fp):
    manifest = json.loads((path / checkpoint.MANIFEST).read_text())
    manifest["fingerprint"] = fp
    (path / checkpoint.MANIFEST).write_text(json.dumps(manifest))
    return path


def test_differences_name_each_changed_setting():
    assert fingerprint.differences(FP, dict(FP)) == []
    assert fingerprint.differences(FP, {**FP, "lr": 0.05, "strategy": "deepspeed_zero2"}) == [
        "lr 0.001 -> 0.05", "strategy ddp -> deepspeed_zero2"]
    assert "older kit" in fingerprint.differences(None, FP)[0]


def test_decide(tmp_path):
    assert resume.decide("auto", tmp_path, FP) is None  # nothing there: a fresh start
    mine = with_fingerprint(fake_checkpoint(tmp_path, 4), FP)
    assert resume.decide("auto", tmp_path, FP) == mine
    assert resume.decide("no", tmp_path, FP) is None
    with pytest.raises(resume.ResumeRefused, match=r"different run \(lr 0.001 -> 0.05\).*--resume no"):
        resume.decide("auto", tmp_path, {**FP, "lr": 0.05})
    with pytest.raises(resume.ResumeRefused, match="not a complete checkpoint"):
        resume.decide(str(tmp_path / "nowhere"), tmp_path, FP)
    with_fingerprint(fake_checkpoint(tmp_path, 8), None)  # written before fingerprints existed
    with pytest.raises(resume.ResumeRefused, match="older kit"):
        resume.decide("auto", tmp_path, FP)
    resume.finish(tmp_path, 8, FP)
    with pytest.raises(resume.ResumeRefused, match=r"holds a finished run \(step 8\).*another --output-dir"):
        resume.decide("auto", tmp_path, FP)


def test_a_restart_of_a_run_that_finished_has_nothing_to_do(tmp_path, monkeypatch):
    """Issue 39: an earlier attempt of this run (its id, its fingerprint) finished it; a restarted attempt ends with
    nothing to train, whatever --resume says. Attempt 1 under the same id is another run: refused or afresh."""
    monkeypatch.setenv("KIT_RUN_ID", "this-run")
    resume.finish(tmp_path, 8, FP)
    (tmp_path / "metrics.json").write_text(json.dumps({"run_id": "this-run", "steps": 8}))
    with pytest.raises(resume.ResumeRefused, match="holds a finished run"):
        resume.decide("auto", tmp_path, FP)   # attempt 1: the id used again
    assert resume.decide("no", tmp_path, FP) is None
    monkeypatch.setenv("PET_RDZV_ID", "kit-attempt-2")
    for how in ("auto", "no"):
        with pytest.raises(resume.AlreadyFinished, match=r"finished by an earlier attempt \(step 8\): its outputs"):
            resume.decide(how, tmp_path, FP)
    assert resume.decision("auto", tmp_path, FP)[::2] == ("finished", 8)
    monkeypatch.delenv("PET_RDZV_ID")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")   # a SLURM requeue is a restart too
    with pytest.raises(resume.AlreadyFinished):
        resume.decide("auto", tmp_path, FP)
    with pytest.raises(resume.ResumeRefused, match=r"lr 0.001 -> 0.05"):   # other arguments: another run
        resume.decide("auto", tmp_path, {**FP, "lr": 0.05})
    (tmp_path / "metrics.json").unlink()   # its outputs are not all there: not done
    with pytest.raises(resume.ResumeRefused, match="holds a finished run"):
        resume.decide("auto", tmp_path, FP)
    assert resume.decide("no", tmp_path, FP) is None


@pytest.mark.slow
def test_a_rank_killed_after_the_run_finished_ends_the_run_succeeded(tmp_path):
    """Issue 39, through kit on the local backend: rank 1 dies by SIGKILL after the run wrote FINISHED, kit starts
    attempt 2, which finds this run's outputs complete and ends with success instead of `resume refused` (exit 5)."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    out, cache = tmp_path / "out", tmp_path / "cache"
    # The script sits in the nodes' workdir beside the reference module, as in a user's project (it imports train).
    shutil.copy(Path(__file__).with_name("finish_then_die.py"), tmp_path / "finish_then_die.py")
    r = run_job(tmp_path, "ddp", resumable_args(data, out, cache, "--max-steps", "3", "--save-every", "2"),
                job_fields={"entrypoint": {"script": "finish_then_die.py"}, "restarts": 1})
    assert r.returncode == 0, r.stdout[-4000:]
    assert "attempt 2/2 after:" in r.stdout and "SIGKILL" in r.stdout, r.stdout[-4000:]
    assert "the run was finished by an earlier attempt (step 3)" in r.stdout, r.stdout[-4000:]
    assert "resume refused" not in r.stdout and r.stdout.count("test accuracy") == 1   # tested once, not retrained
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 3 and (out / "classification_report.txt").is_file()
    assert json.loads((out / resume.FINISHED).read_text())["run_id"] == metrics["run_id"]
    status = json.loads((tmp_path / "runs" / metrics["run_id"] / "status.json").read_text())
    assert status["state"] == "succeeded" and status["exit_code"] == 0, status
    assert [a["state"] for a in status["attempts"]][:1] == ["failed"], status["attempts"]


def with_run_id(path, run_id):
    manifest = json.loads((path / checkpoint.MANIFEST).read_text())
    manifest["run_id"] = run_id
    (path / checkpoint.MANIFEST).write_text(json.dumps(manifest))
    return path


def test_resume_no_applies_to_a_kit_runs_first_attempt_only(tmp_path, monkeypatch, capsys):
    """A restarted attempt gets the job's `--resume no` again: it continues the run's own checkpoint (same
    KIT_RUN_ID) and starts from scratch only over another run's."""
    monkeypatch.setenv("KIT_RUN_ID", "this-run")
    with_run_id(with_fingerprint(fake_checkpoint(tmp_path, 4), FP), "earlier-run")
    assert resume.decide("no", tmp_path, FP) is None
    mine = with_run_id(with_fingerprint(fake_checkpoint(tmp_path, 8), FP), "this-run")
    assert resume.decide("no", tmp_path, FP) == mine
    assert capsys.readouterr().out == (f"--resume no applies to the run's first attempt: continuing its own "
                                       f"checkpoint {mine}\n")
    monkeypatch.delenv("KIT_RUN_ID")   # by hand, --resume no is always a fresh start
    assert resume.decide("no", tmp_path, FP) is None


def test_resume_no_under_a_run_id_used_again_starts_afresh_and_never_refuses(tmp_path, monkeypatch):
    """The same KIT_RUN_ID is not always a restart: a record deleted and its id given again, a sweep trial run
    again. Its checkpoint with other arguments, or a finished run under the id, is not continued (nor refused)."""
    monkeypatch.setenv("KIT_RUN_ID", "this-run")
    with_run_id(with_fingerprint(fake_checkpoint(tmp_path, 8), {**FP, "lr": 0.5}), "this-run")
    assert resume.decide("no", tmp_path, FP) is None
    mine = with_run_id(with_fingerprint(fake_checkpoint(tmp_path, 9), FP), "this-run")
    assert resume.decide("no", tmp_path, FP) == mine
    (tmp_path / resume.FINISHED).write_text(json.dumps({"fingerprint": FP, "step": 9}))
    assert resume.decide("no", tmp_path, FP) is None


def test_resume_no_on_a_restart_keeps_the_runs_own_pretraining(tmp_path, monkeypatch):
    from train import pretrain
    current = pretrain.phase_fingerprint(FP)
    where = pretrain.directory(tmp_path)
    monkeypatch.setenv("KIT_RUN_ID", "this-run")
    with_run_id(with_fingerprint(fake_checkpoint(where, 3), current), "earlier-run")
    assert pretrain.decide("no", tmp_path, current) == ("fresh", None)
    mine = with_run_id(with_fingerprint(fake_checkpoint(where, 6), current), "this-run")
    assert pretrain.decide("no", tmp_path, current) == ("resume", str(mine))
    (where / pretrain.FINISHED).write_text(json.dumps({"fingerprint": current, "run_id": "this-run"}))
    assert pretrain.decide("no", tmp_path, current) == ("done", None)
    (where / pretrain.FINISHED).write_text(json.dumps({"fingerprint": current, "run_id": "earlier-run"}))
    assert pretrain.decide("no", tmp_path, current) == ("resume", str(mine))


def test_fresh_start_clears_an_earlier_run(tmp_path):
    fake_checkpoint(tmp_path, 4)
    for name in ("metrics.json", resume.FINISHED):
        (tmp_path / name).write_text("{}")
    resume.start(tmp_path, owner=True, fresh=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("resume refused:")]
    assert len(lines) == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    return lines[0]


@pytest.mark.slow
def test_rerun_of_a_finished_run_is_refused_not_reported_as_success(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    out, cache = tmp_path / "out", tmp_path / "cache"
    first = train_by_hand(resumable_args(data, out, cache, "--max-steps", "3"))
    assert first.returncode == 0, first.stderr[-3000:]
    before = (out / "metrics.json").read_text()
    again = train_by_hand(resumable_args(data, out, cache, "--max-steps", "3", "--lr", "5e-2"))
    assert again.returncode == EXIT_RESUME_REFUSED
    line = _one_line(again.stderr)
    assert "finished run (step 3" in line and "lr 0.001 -> 0.05" in line and "--resume no" in line
    assert (out / "metrics.json").read_text() == before  # the finished run's figures, untouched
    fresh = train_by_hand(resumable_args(data, out, cache, "--max-steps", "3", "--lr", "5e-2", "--resume", "no"))
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 3 and metrics["args"]["lr"] == 0.05 and metrics["train_time_s"] > 0
    assert [e["step"] for e in metrics["train_log"]] == [3]  # --log-every 5: only this run's last step


@pytest.mark.slow
def test_interrupted_run_resumes_without_a_flag_but_not_with_other_settings(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    out, cache = tmp_path / "out", tmp_path / "cache"
    common = ("--max-steps", "4", "--save-every", "2")
    first = train_by_hand(resumable_args(data, out, cache, *common), KIT_TRAIN_TEST_SIGNAL_AT_STEP="2")
    assert first.returncode == EXIT_PREEMPTED, first.stderr[-3000:]
    other = train_by_hand(resumable_args(data, out, cache, *common, "--lr", "5e-2"))
    assert other.returncode == EXIT_RESUME_REFUSED
    assert "lr 0.001 -> 0.05" in _one_line(other.stderr)
    assert not (out / "metrics.json").exists() and (out / preempt.MARKER).exists()
    # A requeue: the same job again, no flag; the eval interval may change (it does not shape the trajectory).
    again = train_by_hand(resumable_args(data, out, cache, *common, "--eval-every", "1"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resumed from" in again.stdout + again.stderr and "step-2" in again.stdout + again.stderr
    assert json.loads((out / "metrics.json").read_text())["steps"] == 4


@pytest.mark.slow
def test_deepspeed_rerun_on_a_ddp_checkpoint_is_one_line(tmp_path):
    """The reported repro: a DDP run's checkpoint, then the same job with strategy deepspeed."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = resumable_args(data, out, cache, "--max-steps", "4", "--save-every", "2")
    first = run_job(tmp_path, "ddp", args, extra_env={"KIT_TRAIN_TEST_SIGNAL_AT_STEP": "2"})
    assert f"exit {EXIT_PREEMPTED}" in first.stdout, first.stdout[-4000:]
    second = run_job(tmp_path, "deepspeed", args, stage=2)
    assert second.returncode != 0
    # One rank says it (the main process), and kit's summary line repeats it as the run's cause.
    refused = [line for line in second.stdout.splitlines() if line.startswith("[node") and "resume refused:" in line]
    assert len(refused) == 1, second.stdout[-4000:]
    # The root cause torchrun reports may be a rank that refused silently: then kit quotes the main process.
    assert re.search(r"exited 5 \(resume refused\): (rank 0 said: )?resume refused: .*\(strategy ddp -> deepspeed_zero2\)",
                     second.stdout.splitlines()[-1]), second.stdout.splitlines()[-1]
    assert "strategy ddp -> deepspeed_zero2" in refused[0] and "--resume no" in refused[0]
    assert "AssertionError" not in second.stdout and "Traceback" not in second.stdout, second.stdout[-4000:]
    assert not (out / "metrics.json").exists()


def test_without_a_shared_file_system_only_ddp_resumes(tmp_path, monkeypatch):
    """Under DeepSpeed/FSDP only the main node writes the model states: resuming elsewhere is refused clearly."""
    import accelerate.utils
    import torch
    from types import SimpleNamespace

    monkeypatch.setattr(accelerate.utils, "broadcast_object_list", lambda objects: objects)
    acc = SimpleNamespace(is_main_process=True, device=torch.device("cpu"), reduce=lambda t, reduction: t)
    mine = with_fingerprint(fake_checkpoint(tmp_path, 4), FP)
    assert resume.agree(acc, "auto", tmp_path, FP, shared_fs=False, strategy="ddp") == mine
    with pytest.raises(resume.ResumeRefused, match="without a shared file system only the main node holds"):
        resume.agree(acc, "auto", tmp_path, FP, shared_fs=False, strategy="deepspeed_zero3")
    peer_lacks_it = SimpleNamespace(**{**vars(acc), "reduce": lambda t, reduction: t + 1})  # one other rank
    with pytest.raises(resume.ResumeRefused, match=r"1 rank\(s\) cannot see a complete copy"):
        resume.agree(peer_lacks_it, "auto", tmp_path, FP, shared_fs=False, strategy="ddp")


def test_a_restarts_own_checkpoint_that_cannot_be_continued_starts_afresh_as_resume_no_asks(tmp_path, monkeypatch):
    """--resume no on a restart continues the run's own checkpoint where it can; where it cannot (no shared file
    system under DeepSpeed/FSDP, a node without its copy), it starts from scratch as asked: never a refusal."""
    import accelerate.utils
    import torch
    from types import SimpleNamespace

    monkeypatch.setattr(accelerate.utils, "broadcast_object_list", lambda objects: objects)
    monkeypatch.setenv("KIT_RUN_ID", "this-run")
    said = []
    acc = SimpleNamespace(is_main_process=True, device=torch.device("cpu"), reduce=lambda t, reduction: t,
                          print=said.append)
    mine = with_run_id(with_fingerprint(fake_checkpoint(tmp_path, 4), FP), "this-run")
    assert resume.agree(acc, "no", tmp_path, FP, shared_fs=False, strategy="ddp") == mine
    assert resume.agree(acc, "no", tmp_path, FP, shared_fs=False, strategy="deepspeed_zero3") is None
    peer_lacks_it = SimpleNamespace(**{**vars(acc), "reduce": lambda t, reduction: t + 1})
    assert resume.agree(peer_lacks_it, "no", tmp_path, FP, shared_fs=False, strategy="ddp") is None
    assert [s.split(":")[0] for s in said] == ["--resume no", "--resume no"], said
