"""What a cluster's `sync:` copies, listed on this machine: globs as users write them, kit's records and caches
never, and a list too long to be code refused in one line."""

import pytest

from launcher.backends.ssh import sync_list
from launcher.backends.ssh.placement import SyncOptions
from launcher.backends.ssh.sync_list import glob_regex, sync_plan
from launcher.errors import KitError


@pytest.mark.parametrize("pattern, path, matches", [
    ("*.py", "a.py", True), ("*.py", "deep/er/a.py", True), ("*.py", "a.pyc", False),
    ("src/*.py", "src/a.py", True), ("src/*.py", "src/x/a.py", False), ("src/**/*.py", "src/x/y/a.py", True),
    ("src/**/*.py", "src/a.py", True), ("data/", "data/x/y.bin", True), ("data/", "mydata/x", False),
    ("data/**", "data/x", True), ("?.txt", "a.txt", True), ("?.txt", "ab.txt", False),
    ("a[1].py", "a[1].py", True),
])
def test_globs(pattern, path, matches):
    assert bool(glob_regex(pattern).match(path)) is matches


def _tree(root, names):
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)


def test_outside_git_every_file_but_records_and_caches(tmp_path):
    _tree(tmp_path, ["train.py", "lib/util.py", "runs/r1/status.json", "lib/__pycache__/util.cpython-311.pyc",
                     ".git/HEAD", "notes.md"])
    plan = sync_plan(SyncOptions(source=str(tmp_path)), "runs", str(tmp_path))
    assert plan.files == ("lib/util.py", "notes.md", "train.py")
    assert plan.chosen_by == ("every file (not a git checkout), less .venv/, __pycache__/, /outputs/, /runs/ "
                              "(without a .kitignore, its defaults)")
    plan = sync_plan(SyncOptions(source=str(tmp_path), exclude=["*.md"]), "runs", str(tmp_path))
    assert plan.files == ("lib/util.py", "train.py")


def test_a_relative_source_is_taken_from_the_directory_kit_runs_in(tmp_path):
    _tree(tmp_path / "code", ["a.py"])
    assert sync_plan(SyncOptions(source="code"), "runs", str(tmp_path)).source == str(tmp_path / "code")
    assert sync_plan(SyncOptions(), "runs", str(tmp_path / "code")).files == ("a.py",)


def test_a_missing_source_or_too_many_files_is_one_line(tmp_path, monkeypatch):
    with pytest.raises(KitError, match=r"^sync.source .*/nope: no such directory"):
        sync_plan(SyncOptions(source="nope"), "runs", str(tmp_path))
    _tree(tmp_path, [f"f{i}" for i in range(5)])
    monkeypatch.setattr(sync_list, "MAX_FILES", 4)
    with pytest.raises(KitError, match=r"^sync: 5 files under .*narrow it with sync.include / sync.exclude"):
        sync_plan(SyncOptions(source=str(tmp_path)), "runs", "/")


def test_only_the_records_own_directory_is_skipped_and_never_a_virtualenv(tmp_path):
    _tree(tmp_path, ["pkg/runs/__init__.py", "runs/r1/status.json", "records/r2/node0.log", "venv/pyvenv.cfg",
                     "venv/lib/site.py", "a.py"])
    assert sync_plan(SyncOptions(source=str(tmp_path)), "runs", str(tmp_path)).files == \
        ("a.py", "pkg/runs/__init__.py", "records/r2/node0.log")
    absolute = sync_plan(SyncOptions(source=str(tmp_path), include=["**/*"]), str(tmp_path / "records"), "/")
    assert absolute.files == ("a.py", "pkg/runs/__init__.py", "runs/r1/status.json")


def test_a_script_sync_would_leave_behind_is_one_line(tmp_path):
    from launcher.backends.ssh.sync_list import check_script_synced
    _tree(tmp_path, ["a.py", "new.py"])
    plan = sync_plan(SyncOptions(source=str(tmp_path), exclude=["new.py"]), "runs", str(tmp_path))
    check_script_synced(plan, "a.py", ".")
    check_script_synced(plan, "/elsewhere/on/the/hosts.py", ".")   # not a file of the source
    with pytest.raises(KitError, match=r"^sync: the job's script new.py is not among the files sync copies"):
        check_script_synced(plan, "new.py", ".")


def test_outside_git_the_defaults_leave_out_virtualenvs_caches_and_earlier_outputs(tmp_path):
    # A .venv without pyvenv.cfg (made by other tools, or copied), outputs of earlier runs at the top.
    _tree(tmp_path, ["train.py", ".venv/lib/site-packages/torch/__init__.py", "outputs/bert/model.bin",
                     "pkg/outputs.py", "pkg/outputs/keep.py", "runs/r/node0.log"])
    assert sync_plan(SyncOptions(source=str(tmp_path)), "runs", str(tmp_path)).files == \
        ("pkg/outputs.py", "pkg/outputs/keep.py", "train.py")


@pytest.mark.parametrize("rules, kept", [
    ("", (".venv/x.py", "a.log", "data/big.bin", "data/keep.txt", "outputs/o.bin", "src/a.py", "src/b/c.py")),
    ("*.log\n# a comment\n\ndata/\n", (".venv/x.py", "outputs/o.bin", "src/a.py", "src/b/c.py")),
    ("data/*\n!data/keep.txt\n", (".venv/x.py", "a.log", "data/keep.txt", "outputs/o.bin", "src/a.py", "src/b/c.py")),
    ("data/\n!data/keep.txt\n", (".venv/x.py", "a.log", "outputs/o.bin", "src/a.py", "src/b/c.py")),  # as git
    ("/src/b\n", (".venv/x.py", "a.log", "data/big.bin", "data/keep.txt", "outputs/o.bin", "src/a.py")),
    ("**/c.py\n*.bin\n", (".venv/x.py", "a.log", "data/keep.txt", "src/a.py")),
    ("[ab].*\n", (".venv/x.py", "data/big.bin", "data/keep.txt", "outputs/o.bin", "src/b/c.py")),
], ids=["empty file: nothing left out", "names and dirs", "re-included", "not under an excluded dir", "anchored",
        "double star", "class"])
def test_a_kitignore_replaces_the_defaults_with_gitignore_rules(tmp_path, rules, kept):
    _tree(tmp_path, [".venv/x.py", "a.log", "data/big.bin", "data/keep.txt", "outputs/o.bin", "src/a.py",
                     "src/b/c.py"])
    (tmp_path / ".kitignore").write_text(rules)
    plan = sync_plan(SyncOptions(source=str(tmp_path)), "runs", str(tmp_path))
    assert plan.files == tuple(sorted((".kitignore", *kept)))
    assert plan.chosen_by == "every file (not a git checkout), less .kitignore"


def test_in_a_git_checkout_only_a_kitignore_narrows_the_tracked_files(tmp_path):
    import subprocess
    _tree(tmp_path, ["train.py", "outputs/reference.json", "notes/todo.md"])
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    assert sync_plan(SyncOptions(), "runs", str(tmp_path)).files == ("notes/todo.md", "outputs/reference.json",
                                                                     "train.py")   # git chose: no defaults
    (tmp_path / ".kitignore").write_text("notes/\n")
    plan = sync_plan(SyncOptions(), "runs", str(tmp_path))
    assert plan.files == ("outputs/reference.json", "train.py")
    assert plan.chosen_by == "the git-tracked files, less .kitignore"


def test_an_unreadable_kitignore_is_one_line(tmp_path):
    (tmp_path / ".kitignore").write_bytes(b"\xff\xfe*.log\n")
    with pytest.raises(KitError, match=r"^sync: .*/\.kitignore: cannot be read .*; fix or remove it$"):
        sync_plan(SyncOptions(source=str(tmp_path)), "runs", str(tmp_path))
