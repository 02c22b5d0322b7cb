"""Code sync to SSH hosts whose workdir is not the submitter's directory: the git-tracked files (only those)
reach the workdir before the checks, a second run copies only what changed, a workdir that is the source itself is
left alone, and the dry-run lists exactly what is copied."""

import json
import os
import re
import shutil
import subprocess

import pytest

from tests.backends.sshrun import cluster
from tests.launcher.localrun import PROBE, kit, reports


def _git(src, *argv):
    subprocess.run(["git", "-C", str(src), *argv], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture
def project(tmp_path):
    """A user's git checkout: their script (tracked), a helper module in a package, an untracked scratch file and
    an ignored data file (neither is code to copy)."""
    src = tmp_path / "project"
    (src / "pkg").mkdir(parents=True)
    shutil.copy(PROBE, src / "probe.py")
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "helper.py").write_text("VALUE = 1\n")
    (src / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(src / "run.sh", 0o755)
    (src / ".gitignore").write_text("data/\n")
    _git(src, "init", "-q")
    _git(src, "add", ".")
    _git(src, "commit", "-qm", "code")
    (src / "scratch.txt").write_text("untracked\n")
    (src / "data").mkdir()
    (src / "data" / "big.bin").write_bytes(b"x" * 1000)
    return src


TRACKED = [".gitignore", "pkg/__init__.py", "pkg/helper.py", "probe.py", "run.sh"]


def _submit(ssh_hosts, tmp_path, src, remote, run_id, *extra):
    out = tmp_path / f"out-{run_id}"
    out.mkdir()
    config = cluster(ssh_hosts, tmp_path, workdir=str(remote), sync={"source": str(src)})
    return kit("submit", "probe.py", "--cluster", config, "--nodes", "2", "--gpus", "0", "--run-id", run_id,
               *extra, "--", "--out", str(out), cwd=tmp_path, timeout=180), out


def _on_host(host, remote, *names):
    """The host's own view of its workdir: each harness host sees $HOME through an overlay of its own, so a
    workdir there is on a disk no other host (nor this machine) shares."""
    listed = host.run(["sh", "-c", f"cd {remote} 2>/dev/null && find . -path ./runs -prune -o -type f -print | sort"],
                      check=False).stdout
    return [line[2:] for line in listed.splitlines()], [host.run(["cat", f"{remote}/{n}"]).stdout for n in names]


@pytest.fixture
def host_home_dir(ssh_hosts, tmp_path):
    """A workdir under $HOME, which each harness host sees through an overlay of its own; removed from every
    host afterwards (later tests compare the hosts' homes with this machine's)."""
    remote = f"{os.path.expanduser('~')}/kit-sync-{tmp_path.name}"
    yield remote
    for host in ssh_hosts.hosts:
        host.run(["rm", "-rf", remote], check=False)


def test_the_tracked_files_reach_each_hosts_own_disk_then_only_what_changed(ssh_hosts, tmp_path, project,
                                                                             host_home_dir):
    remote = host_home_dir
    dry, _ = _submit(ssh_hosts, tmp_path, project, remote, "sync-dry", "--dry-run", "--format", "json")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)["sync"]
    assert planned["files"] == TRACKED and planned["source"] == str(project)
    assert planned["chosen_by"] == "the git-tracked files"
    assert all(_on_host(h, remote)[0] == [] for h in ssh_hosts.hosts)   # a dry-run copies nothing

    first, out = _submit(ssh_hosts, tmp_path, project, remote, "sync-1")
    assert first.returncode == 0, first.stderr
    assert [r["world_size"] for r in reports(out)] == [2, 2]   # the script ran from each host's copy
    assert f"kit: sync from {project}: n1:{remote} 5 of 5 copied, n2:{remote} 5 of 5 copied" in first.stderr
    for host in ssh_hosts.hosts:
        files, (helper,) = _on_host(host, remote, "pkg/helper.py")
        assert files == sorted(TRACKED) and helper == "VALUE = 1\n"   # not the untracked or ignored files
        assert host.run(["stat", "-c", "%a", f"{remote}/run.sh"]).stdout.strip() == "755"
    assert not os.path.exists(remote)   # this machine's own $HOME never saw them

    (project / "pkg" / "helper.py").write_text("VALUE = 2\n")
    second, _ = _submit(ssh_hosts, tmp_path, project, remote, "sync-2")
    assert second.returncode == 0, second.stderr
    assert f"n1:{remote} 1 of 5 copied, n2:{remote} 1 of 5 copied" in second.stderr
    assert all(_on_host(h, remote, "pkg/helper.py")[1] == ["VALUE = 2\n"] for h in ssh_hosts.hosts)


def test_a_workdir_that_is_the_source_itself_is_not_copied_onto_itself(ssh_hosts, tmp_path, project):
    before = {f: os.stat(project / f).st_mtime_ns for f in TRACKED}
    result, out = _submit(ssh_hosts, tmp_path, project, project, "sync-same")
    assert result.returncode == 0, result.stderr
    assert f"n1:{project}, n2:{project} is {project} itself (a shared filesystem): nothing copied there" \
        in result.stderr
    assert {f: os.stat(project / f).st_mtime_ns for f in TRACKED} == before


def test_include_and_exclude_choose_the_files(ssh_hosts, tmp_path, project):
    remote = tmp_path / "host-disk"
    config = cluster(ssh_hosts, tmp_path, workdir=str(remote),
                     sync={"source": str(project), "include": ["**/*.py", "data/"], "exclude": ["pkg/helper.py"]})
    dry = kit("submit", "probe.py", "--cluster", config, "--gpus", "0", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    head = dry.stdout.split("\nfiles: ", 1)[0]
    listed = [line.strip() for line in head.split("\nsync: ", 1)[1].splitlines()[1:]]
    assert listed == ["data/big.bin", "pkg/__init__.py", "probe.py"]
    # The run root (runs/ in the directory kit runs in) is outside the source: no rule for it.
    assert "(the files matching sync.include, less .venv/, __pycache__/, /outputs/ (without a .kitignore, " \
        "its defaults), less sync.exclude)" in head


def test_sync_is_refused_where_no_host_has_a_disk_of_its_own(tmp_path):
    config = tmp_path / "local.yaml"
    config.write_text("name: l\nbackend: local\nsync: {}\n")
    r = kit("submit", PROBE, "--cluster", str(config), "--dry-run", cwd=tmp_path)
    assert r.returncode == 2 and "sync: section given but backend is local" in r.stderr


def test_a_new_script_git_does_not_track_is_refused_before_any_login(ssh_hosts, tmp_path, project):
    (project / "new_train.py").write_text("print('new')\n")
    config = cluster(ssh_hosts, tmp_path, workdir=str(tmp_path / "host-disk"), sync={"source": str(project)})
    r = kit("submit", "new_train.py", "--cluster", config, "--gpus", "0", cwd=project)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "sync: the job's script new_train.py is not among the files sync copies" in r.stderr
    assert "git add it" in r.stderr and not (tmp_path / "host-disk").exists()


def test_a_helper_module_git_does_not_track_is_named_before_any_login(ssh_hosts, tmp_path, project):
    # The script is tracked, the module it imports is not: sync would leave it behind, and the run would fail on
    # the hosts with an ImportError. The dry-run says the same line.
    (project / "train_with_helper.py").write_text("import os\nfrom helper_new import VALUE\nprint(VALUE)\n")
    _git(project, "add", "train_with_helper.py")
    (project / "helper_new.py").write_text("VALUE = 3\n")
    config = cluster(ssh_hosts, tmp_path, workdir=str(tmp_path / "host-disk"), sync={"source": str(project)})
    expected = (f"kit: error: sync: helper_new.py (module helper_new, imported by train_with_helper.py) is not among "
                f"the files sync copies from {project} (the git-tracked files); git add helper_new.py, or list it in "
                f"sync.include, or the hosts will not have it\n")
    for dry in ([], ["--dry-run"]):
        r = kit("submit", "train_with_helper.py", "--cluster", config, "--gpus", "0", *dry, cwd=project)
        assert (r.returncode, r.stdout, r.stderr) == (2, "", expected)
    assert not (tmp_path / "host-disk").exists()
    _git(project, "add", "helper_new.py")
    ok = kit("submit", "train_with_helper.py", "--cluster", config, "--gpus", "0", "--dry-run", cwd=project)
    assert ok.returncode == 0, ok.stderr


def test_outside_git_the_kitignore_rules_choose_what_reaches_the_hosts(ssh_hosts, tmp_path, host_home_dir):
    src = tmp_path / "plain"
    for name in ("probe.py", ".venv/lib/big.py", "__pycache__/probe.pyc", "outputs/old/model.bin", "data/x.csv"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("x\n")
    shutil.copy(PROBE, src / "probe.py")
    dry, _ = _submit(ssh_hosts, tmp_path, src, host_home_dir, "ign-dry", "--dry-run", "--format", "json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["sync"]["files"] == ["data/x.csv", "probe.py"]   # the defaults
    (src / ".kitignore").write_text("# data stays here\ndata/\n__pycache__/\n.venv/\n")
    dry, _ = _submit(ssh_hosts, tmp_path, src, host_home_dir, "ign-dry2", "--dry-run")
    assert "sync: 3 file(s) from " in dry.stdout and "(every file (not a git checkout), less .kitignore)" in dry.stdout
    listed = [line.strip() for line in dry.stdout.split("\nsync: ", 1)[1].split("\nfiles: ", 1)[0].splitlines()[1:]]
    assert listed == [".kitignore", "outputs/old/model.bin", "probe.py"]
    run, out = _submit(ssh_hosts, tmp_path, src, host_home_dir, "ign-run")
    assert run.returncode == 0, run.stderr
    for host in ssh_hosts.hosts:
        assert _on_host(host, host_home_dir)[0] == listed   # exactly what the dry-run listed
