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
