"""The environment check's plan and program (render/envcheck.py): where the plan puts it (each SLURM task before its
launcher; nothing in an SSH node's command, whose checks take the fingerprint), and the program itself, run as two
"nodes" on this machine, one of which sees another accelerate (a dist-info first on its path). The meeting of many
"nodes" (processes with a SLURM task's variables on one run directory) runs through bench/env_check.py's `meet`:
its file operations per node counted by strace, a node that never reports."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.insight.drift import differing, fingerprint, judge, table
from launcher.render.envcheck import program
from tests.launcher.planning import SLURM_GPU, SSH_GPU, cluster, job, plan

CHECK = "runs/test-run/env_check.py"


def test_slurm_tasks_run_the_check_before_their_launcher():
    p = plan(job(nodes=2), cluster(SLURM_GPU))
    lines = p.nodes[0].command.splitlines()
    check = [i for i, ln in enumerate(lines) if CHECK in ln]
    assert len(check) == 1 and lines[check[0] + 1].startswith("exec ")
    assert lines[check[0]] == (f'/opt/kit/venv/bin/python {CHECK} strict 2 "${{SLURM_NODEID}}" 300 module train '
                               f"|| exit $?")
    assert p.files[CHECK] == program() and p.env_check == "strict"


def test_no_check_where_nothing_can_differ_or_it_is_off():
    assert CHECK not in plan(job(nodes=1), cluster(SLURM_GPU)).files
    off = plan(job(nodes=2, env_check="off"), cluster(SLURM_GPU))
    assert CHECK not in off.files and CHECK not in off.nodes[0].command
    ssh = plan(job(nodes=2), cluster(SSH_GPU))   # the checks over each host's login take the fingerprint
    assert CHECK not in ssh.files and "env_check" not in ssh.nodes[0].command and ssh.env_check == "strict"


def _fake_accelerate(tmp_path, version: str) -> str:
    d = tmp_path / "fake" / f"accelerate-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: accelerate\nVersion: {version}\n\n")
    return str(d.parent)


def _two_nodes(tmp_path, mode: str, other_path: str):
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    (run / "env_check.py").write_text(program())
    (tmp_path / "t.py").write_text("print('job')\n")

    def start(node, extra):
        env = {**os.environ, **extra}
        return subprocess.Popen([sys.executable, "runs/r/env_check.py", mode, "2", str(node), "30", "script",
                                 "t.py"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    procs = [start(0, {}), start(1, {"PYTHONPATH": other_path})]
    return [(p.wait(timeout=60), p.stderr.read()) for p in procs], run


def test_the_program_stops_every_node_with_the_table_in_strict_mode(tmp_path):
    (code0, err0), (code1, err1), = _two_nodes(tmp_path, "strict", _fake_accelerate(tmp_path, "0.0.1"))[0]
    import accelerate
    assert (code0, code1) == (2, 2)
    assert err0.splitlines()[1].split() == ["environment", "node", "0", f"({os.uname()[1]})", "node", "1",
                                            f"({os.uname()[1]})"]
    assert err0.splitlines()[2].split() == ["accelerate", accelerate.__version__, "0.0.1"]
    assert f"accelerate {accelerate.__version__} on node 0" in err1.splitlines()[-1]


def test_warn_mode_trains_on_and_equal_nodes_say_nothing(tmp_path):
    (results, run) = _two_nodes(tmp_path / "w", "warn", _fake_accelerate(tmp_path, "0.0.1"))
    assert [c for c, _ in results] == [0, 0] and "(env_check: warn, training anyway)" in results[0][1]
    same, _ = _two_nodes(tmp_path / "s", "strict", str(tmp_path / "nothing"))
    assert same == [(0, ""), (0, "")]
    reported = json.loads(next(run.glob("env.0.node1.*.json")).read_text())
    assert reported["env"]["accelerate"] == "0.0.1" and reported["env"]["code"] == fingerprint("script", str(
        tmp_path / "w" / "t.py"))["code"]


def test_kit_judges_as_the_nodes_do(capsys):
    here = fingerprint("module", "train")
    assert here["code"] != "missing" and here["python"] == sys.version.split()[0]
    other = {**here, "deepspeed": None}
    reports = [("node 0 (a)", here), ("node 1 (b)", other)]
    assert differing(reports) == [("deepspeed", [here["deepspeed"], None])]
    assert table(reports, differing(reports))[1].split() == ["deepspeed", here["deepspeed"], "-"]
    assert judge("warn", reports).startswith("deepspeed ") and "training anyway" in capsys.readouterr().err
    assert judge("strict", [("node 0 (a)", here), ("node 1 (b)", here)]) is None
    many = [(f"node {i} (h{i})", here if i != 7 else other) for i in range(12)]
    assert table(many, differing(many)) == [f"deepspeed: {here['deepspeed']} on node 0 (h0), node 1 (h1), node 2 "
                                            f"(h2), node 3 (h3) and 7 more; - on node 7 (h7)"]


def _bench():
    path = Path(__file__).parents[2] / "bench" / "env_check.py"
    spec = importlib.util.spec_from_file_location("bench_env_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_nodes_file_operations_do_not_grow_with_the_nodes(tmp_path):
    """Each node's opens, stats, renames and listings in the shared run directory (strace), at 16 and 64 nodes:
    the most any node makes grows by no more than a few looks (they follow the time waited, not the nodes)."""
    bench = _bench()
    if shutil.which("strace") is None or not bench.strace_works():
        pytest.skip("strace is not installed or may not trace here")
    most = {}
    for n in (16, 64):
        got = bench.meet(program(), n, tmp_path / str(n), python_flags=("-S",))
        assert sorted(got) == list(range(n)) and {code for code, _, _ in got.values()} == {0}, got
        assert all(err == "" for _, err, _ in got.values())
        most[n] = max(ops for _, _, ops in got.values())
    assert most[16] >= 3   # each node's write, rename and look at least: the count sees them
    assert most[64] <= most[16] + 10, most


def test_strict_stops_every_node_naming_one_that_never_reported(tmp_path):
    got = _bench().meet(program(), 4, tmp_path, absent=(2,), wait=2, trace=False)
    lines = {err.splitlines()[-1] for _, err, _ in got.values()}
    assert [code for code, _, _ in got.values()] == [2, 2, 2] and len(lines) == 1, got
    line = lines.pop()
    assert line.startswith("kit: env_check: node 2 sent no environment fingerprint within 2 s") and "warn" in line
    assert all(len(err.splitlines()) == 1 for _, err, _ in got.values())


def test_strict_stops_when_node_0_gives_no_verdict(tmp_path):
    got = _bench().meet(program(), 3, tmp_path, absent=(0,), wait=1, trace=False)
    assert [code for code, _, _ in got.values()] == [2, 2], got
    assert all(err.startswith("kit: env_check: node 0 gave no verdict within 2 s") for _, err, _ in got.values())


def test_warn_says_who_never_reported_and_compares_the_rest(tmp_path):
    other = {3: {"PYTHONPATH": _fake_accelerate(tmp_path, "0.0.1")}}
    got = _bench().meet(program(), 4, tmp_path / "m", mode="warn", absent=(1,), wait=2, trace=False, env_of=other)
    assert [code for code, _, _ in got.values()] == [0, 0, 0], got
    never = "kit: env_check: node 1 sent no environment fingerprint within 2 s; not compared (env_check: warn, " \
            "training anyway)"
    assert all(never in err.splitlines() for _, err, _ in got.values()), got
    assert got[0][1].splitlines()[0] == "kit: the nodes' environments differ (env_check: warn, training anyway):"
    assert got[0][1].splitlines()[1].split() == ["environment", "node", "0", "(n0)", "node", "2", "(n2)", "node",
                                                 "3", "(n3)"]
    drift = {err.splitlines()[-1] for _, err, _ in got.values()}
    assert len(drift) == 1 and drift.pop().endswith("0.0.1 on node 3 (n3); env_check: warn")
