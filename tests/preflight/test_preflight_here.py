"""The checks of the job's code made on this machine before anything starts (launcher/preflight/here.py,
source.py): what is found, what is refused, and what is left to the nodes."""

import os

import pytest

from launcher.errors import KitError
from launcher.preflight.here import check_here
from launcher.preflight.source import compile_file, local_modules, module_file
from launcher.planning.model import SyncPlan
from tests.launcher.planning import LOCAL_CPU, cluster, job, plan

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tree(root, files: dict):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _entry(script=None, module=None):
    return type("Entrypoint", (), {"script": script, "module": module})()


def test_the_modules_of_its_own_are_followed_through_packages_and_relative_imports(tmp_path):
    _tree(tmp_path, {"train.py": "import os, helper\nfrom pkg.sub import thing\n",
                     "helper.py": "def f():\n    import deep\n", "deep.py": "",
                     "pkg/__init__.py": "", "pkg/sub/__init__.py": "from . import thing\nfrom .other import x\n",
                     "pkg/sub/thing.py": "", "pkg/sub/other.py": "", "unused.py": ""})
    entry = compile_file(str(tmp_path), "train.py", None, "the job's script")
    found = [m.rel for m in local_modules(str(tmp_path), entry, [str(tmp_path)])]
    assert sorted(found) == ["deep.py", "helper.py", "pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/other.py",
                             "pkg/sub/thing.py"]


def test_a_module_runs_as_its_file_or_its_packages_main(tmp_path):
    _tree(tmp_path, {"a/__init__.py": "", "a/b.py": "", "c/__init__.py": "", "c/__main__.py": ""})
    root = str(tmp_path)
    assert module_file(root, [root], "a.b", run=True) == "a/b.py"
    assert module_file(root, [root], "c", run=True) == "c/__main__.py"
    assert module_file(root, [root], "a", run=True) is None   # no __main__: the nodes' check says so
    assert module_file(root, [root], "installed.elsewhere") is None


def test_the_entrypoint_is_compiled_not_only_parsed(tmp_path):
    _tree(tmp_path, {"t.py": "x = 1\nreturn x\n"})
    with pytest.raises(KitError, match=r"^t.py:2: SyntaxError: 'return' outside function \(the job's script\); "
                                       r"fix it before submitting$"):
        compile_file(str(tmp_path), "t.py", None, "the job's script")


def test_the_reference_module_asks_for_gloo_so_deepspeed_on_cpu_may_run_it():
    p = plan(job(strategy="deepspeed"), cluster(LOCAL_CPU))
    check_here(p, _entry(module="train"), [], REPO, {})


def test_what_cannot_be_seen_from_here_is_left_to_the_nodes(tmp_path):
    p = plan(job(strategy="deepspeed"), cluster(LOCAL_CPU))
    check_here(p, _entry(module="installed_on_the_nodes"), [], str(tmp_path), {})
    check_here(p, _entry(script="train.py"), [], None, {})


def test_a_synced_plan_names_a_module_sync_leaves_behind(tmp_path):
    _tree(tmp_path, {"train.py": "import helper\n", "helper.py": ""})
    synced = plan(job(), cluster(LOCAL_CPU))
    import dataclasses
    sync = SyncPlan(source=str(tmp_path), files=("train.py",), chosen_by="every file (not a git checkout), less "
                                                                         ".kitignore, less sync.exclude")
    with pytest.raises(KitError, match=r"^sync: helper.py \(module helper, imported by train.py\) is not among .*; "
                                       r"drop the sync.exclude rule that leaves it out \(or the .kitignore rule"):
        check_here(dataclasses.replace(synced, sync=sync), _entry(script="train.py"), [], str(tmp_path), {})


def test_the_reference_jobs_arguments_are_checked_by_its_own_parser_before_anything_starts():
    """Issue 41: `-- --lr` without a value printed argparse's usage once per rank, 30 s after the submit."""
    p = plan(job(), cluster(LOCAL_CPU))
    for args, error in ((["--lr"], "argument --lr: expected one argument"),
                        (["--lr", "0.1", "--epochs", "1", "--bogus"], "unrecognized arguments: --bogus"),
                        (["--warmup", "-1"], "--warmup must be >= 0")):
        with pytest.raises(KitError) as e:
            check_here(p, _entry(module="train"), args, REPO, {})
        assert str(e.value) == f"args: python -m train refuses them: {error}; see `python -m train --help`"
    check_here(p, _entry(module="train"), ["--lr", "0.1", "--epochs", "1"], REPO, {})
    check_here(p, _entry(module="other"), ["--lr"], REPO, {})   # not the reference job: its own parser is its own


def test_the_reference_jobs_parser_imports_no_torch():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", "import sys, train.args; print('torch' in sys.modules)"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "False", r.stderr


def test_a_submit_with_an_argument_the_job_refuses_is_one_line_and_starts_nothing(tmp_path):
    import subprocess
    import sys
    for flags in (["--dry-run"], ["--run-id", "refused-args"]):
        r = subprocess.run([sys.executable, "-m", "launcher", "submit", "jobs/bert_cls.yaml", "--cluster",
                            "cluster_configs/local.yaml", *flags, "--", "--lr"], cwd=REPO, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2 and r.stdout == "", r.stdout[-2000:]
        assert r.stderr == ("kit: error: args: python -m train refuses them: argument --lr: expected one argument; "
                            "see `python -m train --help`\n"), r.stderr
    assert not os.path.exists(os.path.join(REPO, "runs", "refused-args"))
