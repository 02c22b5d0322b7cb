"""`kit submit SCRIPT.py`, `kit submit -m MODULE` and `-- ARGS`: a user's own script without a YAML, arguments
passed through untouched, the job built shown by the dry-run, and mistakes that say what was meant."""

import json
import os

import pytest
import yaml

from launcher.cli import parse
from launcher.errors import KitError
from tests.launcher.localrun import PROBE, kit, reports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB = os.path.join(REPO, "jobs", "bert_cls.yaml")
SWEEP_JOB = os.path.join(REPO, "jobs", "bert_cls_sweep.yaml")


def _train_argv(dry_run_text: str) -> str:
    return next(line for line in dry_run_text.splitlines() if "accelerate.commands.launch" in line)


def test_words_after_double_dash_are_the_jobs_even_ones_kit_knows():
    args = parse(["submit", "train.py", "--nodes", "2", "--", "--nodes", "7", "--lr", "3e-4", "--", "x"])
    assert args.job == "train.py" and args.nodes == 2
    assert args.args == ["--nodes", "7", "--lr", "3e-4", "--", "x"]


@pytest.mark.parametrize("argv, message", [
    (["submit", "--dry-run"], "no job given: kit submit JOB.yaml, kit submit SCRIPT.py or kit submit -m MODULE"),
    (["submit", "train.py", "-m", "train"], "give a job (train.py) or -m train, not both"),
    (["submit", JOB, "--gpu", "2"], "did you mean --gpus for --gpu?"),
    (["submit", JOB, "--node", "2"], "needs --dry-run .*; the number of nodes is --nodes"),
    (["submit", JOB, "--gpu", "1"], "did you mean --gpus for --gpu?"),
    (["submit", JOB, "--mixed_precision", "bf16"], "did you mean --mixed-precision for --mixed_precision?"),
    (["submit", JOB, "--procs", "2"], "did you mean --procs-per-node for --procs?"),   # the one flag it begins
    (["submit", JOB, "--lr", "3"], "arguments for the job go after --, e.g. kit submit JOB -- --lr 3e-4"),
    (["logs", "r", "--follw"], "did you mean --follow for --follw?"),
])
def test_command_line_mistakes_say_what_was_meant(argv, message):
    with pytest.raises(KitError, match=message.replace("?", r"\?").replace("(", r"\(").replace(")", r"\)")):
        parse(argv)


def test_a_script_dry_run_shows_the_job_it_built_and_the_args(tmp_path):
    (tmp_path / "my train.py").write_text("print('hi')\n")
    result = kit("submit", "my train.py", "--procs-per-node", "2", "--strategy", "deepspeed", "--set",
                 "deepspeed.zero_stage=3", "--dry-run", "--run-id", "r1", "--", "--lr", "3e-4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    head, _, plan = result.stdout.partition("\n\nkit plan: run r1")
    assert head.startswith("job built from the command line")
    built = yaml.safe_load("\n".join(line[2:] for line in head.splitlines()[1:]))
    assert built == {"name": "my-train", "entrypoint": {"script": "my train.py"}, "args": ["--lr", "3e-4"],
                     "procs_per_node": 2, "strategy": "deepspeed", "deepspeed": {"zero_stage": 3}}
    assert _train_argv(plan).endswith(" 'my train.py' --lr 3e-4")
    # The built job, saved as a file, plans the same run.
    (tmp_path / "saved.yaml").write_text(yaml.safe_dump(built))
    again = kit("submit", "saved.yaml", "--dry-run", "--run-id", "r1", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == "kit plan: run r1" + plan


def test_a_module_dry_run_as_json_carries_the_built_job(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "train.py").write_text("print('hi')\n")
    result = kit("submit", "-m", "pkg.train", "--dry-run", "--format", "json", "--run-id", "r1", "--", "--x",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["job"] == {"name": "train", "entrypoint": {"module": "pkg.train"}, "args": ["--x"]}
    assert data["nodes"][0]["argv"][-3:] == ["-m", "pkg.train", "--x"]


def test_double_dash_args_are_appended_to_a_yaml_jobs_own():
    result = kit("submit", SWEEP_JOB.replace("_sweep", ""), "--dry-run", "--run-id", "r1", "--",
                 "--epochs", "1", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert _train_argv(result.stdout).endswith(" -m train --epochs 1")
    assert "job built from the command line" not in result.stdout


@pytest.mark.parametrize("setting, tail", [
    ("args=--resume no", "-m train --resume no"),
    ("args+=--resume no", "-m train --resume no"),
    ('args+=["--max-steps", "4"]', "-m train --max-steps 4"),
])
def test_set_args_takes_shell_words_and_plus_appends(setting, tail):
    result = kit("submit", JOB, "--dry-run", "--run-id", "r1", "--set", setting, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert _train_argv(result.stdout).endswith(tail)


@pytest.mark.parametrize("extra, message", [
    (["--", "--lr", "0.1"], "-- --lr fixes an argument each trial of the sweep sets; drop it after --"),
    (["--", "--output-dir=x"], "-- --output-dir fixes an argument each trial of the sweep sets"),
    (["--set", 'args=["--batch-size","8"]'], "sets --batch-size, which each trial of the sweep sets"),
    (["--set", "args+=--output-dir o"], "sets --output-dir, which each trial of the sweep sets"),
])
def test_an_override_of_what_a_sweep_sets_is_one_line_exit_2(extra, message):
    result = kit("submit", SWEEP_JOB, "--dry-run", *extra, cwd=REPO)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr


@pytest.mark.parametrize("extra", [["--", "--max-steps", "40"], ["--set", 'args=["--max-steps","40"]']])
def test_a_sweep_keeps_its_swept_values_and_output_dir_under_args_overrides(extra):
    result = kit("submit", SWEEP_JOB, "--dry-run", "--format", "json", *extra, cwd=REPO)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(data["trials"]) == 6 and set(data["trial_plans"]) == {t["run_id"] for t in data["trials"]}
    for trial in data["trials"]:
        argv = data["trial_plans"][trial["run_id"]]["nodes"][0]["argv"]
        tail = argv[argv.index("train") + 1:]
        assert "--max-steps" in tail and "--lr" in tail and "--batch-size" in tail
        assert tail[tail.index("--output-dir") + 1] == trial["output_dir"]


@pytest.mark.slow
def test_a_script_runs_in_a_two_process_world_with_its_args(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = kit("submit", PROBE, "--procs-per-node", "2", "--run-id", "s1", "--", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    ranks = reports(out)
    assert [r["rank"] for r in ranks] == [0, 1] and {r["world_size"] for r in ranks} == {2}


@pytest.mark.parametrize("sets, tail_or_error", [
    # Flags the reference job takes: its arguments are checked by its own parser at submit (preflight/here.py).
    (["args+=--no-dedupe", "args+=--no-bucketing"], "-m train --no-dedupe --no-bucketing"),   # appends compose
    (["args+=--a", "args=--b"], "args: --set args+=--a conflicts with --set args=--b"),
    (["args=--no-bucketing", "args+=--no-dedupe"], "-m train --no-bucketing --no-dedupe"),   # replaced, appended to
])
def test_appends_compose_and_a_replacement_never_silently_drops_one(sets, tail_or_error):
    argv = [word for s in sets for word in ("--set", s)]
    result = kit("submit", JOB, "--dry-run", "--run-id", "r1", *argv, cwd=REPO)
    if tail_or_error.startswith("-m"):
        assert result.returncode == 0 and _train_argv(result.stdout).endswith(tail_or_error)
    else:
        assert result.returncode == 2 and tail_or_error in result.stderr
