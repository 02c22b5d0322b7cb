"""The command line behaves like a careful one: no guessed abbreviations, no run started by a dry-run flag,
no silently lost override, usage when no command is given, strict run ids, spec-relative paths."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.cli import build_parser, parse
from launcher.errors import KitError
from tests.launcher.planning import LOCAL_CPU, cluster, job, plan
from tests.train.launch import link_reference_module

ROOT = Path(__file__).resolve().parents[2]
JOB = str(ROOT / "jobs" / "bert_cls.yaml")


def kit(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "launcher", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_parser_guesses_abbreviations():
    parsers = list(_parsers(build_parser()))
    assert len(parsers) == 12  # kit + submit, status, logs, cancel, wait, runs, doctor, sweep, sweep status,
    #                            report, hosts
    assert all(p.allow_abbrev is False for p in parsers)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]


@pytest.mark.parametrize("argv", [
    ["submit", JOB, "--nodes", "2", "--set", "a=1", "--set", "b=2", "--dry-run", "--format", "json"],
    ["status"], ["logs", "r", "--node", "1", "--follow"], ["cancel", "r", "--run-root", "x"], ["runs"],
    ["status", "r", "--json"], ["wait", "r", "--timeout", "5"],
    ["doctor", "--cluster", "c.yaml", "--job", "j.yaml"], ["sweep", "status", "s", "--format", "json"],
])
def test_a_command_parses_alike_with_only_its_own_parser_built(argv):
    # parse() builds only the parser of the command the line starts with.
    full, only = build_parser(), build_parser(argv[0])
    assert only.parse_args(argv) == full.parse_args(argv) == parse(argv)
    assert _subparser(only, argv[0]).format_help() == _subparser(full, argv[0]).format_help()


@pytest.mark.parametrize("argv, word", [
    (["submit", JOB, "--gpu", "2", "--dry-run"], "--gpu 2"),
    (["submit", JOB, "--dry", "--run-id", "r"], "--dry"),
    (["logs", "r", "--nod", "1"], "--nod 1"),
    (["runs", "--run-r", "x"], "--run-r x"),
])
def test_abbreviation_is_an_error(argv, word):
    with pytest.raises(KitError, match=f"unrecognized arguments: {word}[ ;]"):
        parse(argv)


def test_gpus_abbreviation_is_one_line_exit_2():
    result = kit("submit", JOB, "--gpu", "2", "--dry-run", "--run-id", "r")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("kit: error: unrecognized arguments: --gpu 2; did you mean --gpus for --gpu? "
                             "(see kit submit --help)\n")


def test_dry_run_node_k_prints_node_k_in_full():
    every = kit("submit", JOB, "--dry-run", "--run-id", "r", "--nodes", "3").stdout
    one = kit("submit", JOB, "--dry-run", "--run-id", "r", "--nodes", "3", "--node", "2")
    assert one.returncode == 0 and one.stderr == ""
    section = one.stdout.split("\n\n")[1]
    assert section.startswith("node 2  host ") and "--machine_rank 2 " in section
    assert "\nnode 2  host " not in every and "nodes 1-2: each the same as node 0" in every
    assert "--- file runs/r/accelerate.node2.yaml\n" in one.stdout and "accelerate.node0.yaml" not in one.stdout


@pytest.mark.parametrize("argv, says", [
    (["--dry-run", "--node", "3"], "--node 3: the plan has nodes 0 to 2; --node K prints node K, --nodes N sets"),
    (["--node", "1"], "--node 1 prints node K >= 0 of a dry-run's text and needs --dry-run"),
    (["--dry-run", "--node", "-1"], "--node -1 prints node K >= 0"),
    (["--dry-run", "--format", "json", "--node", "1"], "(not --format json, which holds every node)"),
])
def test_node_out_of_range_or_without_dry_run_is_one_line_exit_2(argv, says, tmp_path):
    link_reference_module(tmp_path)   # the nodes' workdir (.) holds the job's module: its check passes
    result = kit("submit", JOB, "--run-id", "r", "--nodes", "3", *argv, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert result.stderr.startswith("kit: error: ") and says in result.stderr
    assert not (tmp_path / "runs").exists()


def test_format_without_dry_run_is_an_error(tmp_path):
    # It used to start a real run; now nothing is written and nothing starts.
    result = kit("submit", JOB, "--format", "json", "--run-id", "r", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--format json" in result.stderr and "--dry-run" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_format_json_with_dry_run_prints_the_plan():
    result = kit("submit", JOB, "--dry-run", "--format", "json", "--run-id", "r")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["run_id"] == "r"
    assert parse(["submit", JOB, "--dry-run"]).format is None  # text, the default


def test_plain_kit_prints_usage_and_one_error_line():
    result = kit()
    assert result.returncode == 2 and result.stdout == ""
    usage, error = result.stderr.splitlines()
    assert usage.startswith("usage: kit ")
    assert error.startswith("kit: error: no command given; choose one of submit, status, logs, cancel, runs")
    assert "kit: error: kit:" not in result.stderr


def test_unknown_command_prints_usage_and_one_error_line():
    result = kit("sumbit")
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and len(lines) == 2 and lines[0].startswith("usage: kit ")
    assert lines[1].startswith("kit: error: argument command: invalid choice: 'sumbit'")


def test_subcommand_error_is_one_line_without_doubled_prefix():
    result = kit("submit")
    assert result.returncode == 2
    assert result.stderr == (
        "kit: error: no job given: kit submit JOB.yaml, kit submit SCRIPT.py or kit submit -m MODULE (see kit submit --help)\n")


@pytest.mark.parametrize("argv, message", [
    (["--nodes", "2", "--set", "nodes=3"], "nodes: --nodes 2 conflicts with --set nodes=3; give one value"),
    (["--set", "nodes=2", "--set", "nodes=3"], "nodes: --set nodes=2 conflicts with --set nodes=3"),
    (["--port", "30000", "--set", "cluster.master_port=30001"],
     "cluster.master_port: --port 30000 conflicts with --set cluster.master_port=30001"),
    (["--gpus", "0", "--set", "gpus_per_node=1"], "gpus_per_node: --gpus 0 conflicts with --set gpus_per_node=1"),
    (["--set", "deepspeed.zero_stage=2", "--set", "deepspeed={zero_stage: 3}"],
     "deepspeed: --set deepspeed.zero_stage=2 conflicts with --set deepspeed={zero_stage: 3}"),
])
def test_conflicting_overrides_name_both(argv, message):
    result = kit("submit", JOB, "--dry-run", "--run-id", "r", *argv)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"kit: error: {message}") and result.stderr.count("\n") == 1, result.stderr


def test_agreeing_overrides_are_fine():
    result = kit("submit", JOB, "--dry-run", "--run-id", "r", "--nodes", "2", "--set", "nodes=2",
                 "--set", "env.A=1", "--set", "env.B=2")
    assert result.returncode == 0, result.stderr
    assert "world: 2 node(s)" in result.stdout


@pytest.mark.parametrize("run_id", ["r\n", "r\nx", "-r", "r/x", "r" * 129, ""])
def test_bad_run_ids_are_rejected(run_id):
    with pytest.raises(KitError, match="run id"):
        plan(job(), cluster(LOCAL_CPU), run_id=run_id)


def test_run_id_with_trailing_newline_is_rejected_by_the_cli():
    result = kit("submit", JOB, "--dry-run", "--run-id", "r\n")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "kit: error: run id 'r\\n': use letters, digits, '.', '_' and '-' only\n"


def test_logs_takes_follow():
    assert parse(["logs", "--follow"]).follow is True
    assert parse(["logs", "r", "--node", "1"]).follow is False


def test_doctor_takes_a_job_or_a_module_not_both(tmp_path):
    result = kit("doctor", "--cluster", "cluster.yaml", "--job", "train.py", "-m", "pkg.train", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, "kit: error: give --job train.py or -m pkg.train, not both\n")
