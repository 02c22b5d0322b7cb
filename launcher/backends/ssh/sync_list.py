"""Which files a cluster's `sync:` copies: listed on this machine at submit time (read-only), so the dry-run shows
exactly what the run copies. The git-tracked files of a git checkout by default, every file otherwise, less what
the source's `.kitignore` leaves out (kitignore.py); kit's run records and caches never."""

import os
import re
import subprocess
from typing import Optional

from launcher.backends.ssh.kitignore import Ignore, glob_body, read_ignore
from launcher.errors import KitError
from launcher.planning.model import SyncPlan

MAX_FILES = 20000
# Never code: version control, bytecode caches, kit's own run records (the cluster's run_root under source).
ALWAYS_SKIPPED_DIRS = (".git", "__pycache__")


def glob_regex(pattern: str) -> re.Pattern:
    """A glob over relative POSIX paths: `*` and `?` within one name, `**` across directories. A pattern without a
    slash matches a file's name in any directory (`*.py`), as in .gitignore."""
    if "/" not in pattern.rstrip("/"):
        pattern = "**/" + pattern
    if pattern.endswith("/"):
        pattern += "**"
    return re.compile(glob_body(pattern, classes=False) + r"(?:/.*)?\Z")


def _git_files(source: str) -> Optional[list[str]]:
    """The git-tracked files under source, or None when source is not in a git checkout."""
    try:
        top = subprocess.run(
            ["git", "-C", source, "rev-parse", "--show-prefix"], capture_output=True, text=True, timeout=30
        )
        if top.returncode != 0:
            return None
        listed = subprocess.run(
            ["git", "-C", source, "ls-files", "-z", "--cached", "--", "."], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    names = [n.decode("utf-8", "surrogateescape") for n in listed.stdout.split(b"\0") if n]
    # A tracked file deleted in the work tree, or a submodule (a directory), is not a file to copy.
    return [n for n in names if os.path.isfile(os.path.join(source, n)) and not os.path.islink(os.path.join(source, n))]


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _rel(top: str, name: str) -> str:
    return os.path.normpath(os.path.join(top, name)).replace(os.sep, "/")


def _walk(source: str, skip_root: str, ignore: Ignore) -> list[str]:
    found = []
    for top, dirs, files in os.walk(source):
        rel_top = os.path.relpath(top, source)
        # Never a virtualenv (the hosts have their own environment), caches or kit's records; nor what .kitignore
        # leaves out (not even walked: a .venv/ holds thousands of files).
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in ALWAYS_SKIPPED_DIRS
            and not _is_virtualenv(os.path.join(top, d))
            and os.path.normpath(os.path.join(rel_top, d)) != skip_root
            and not ignore.excluded_dir(_rel(rel_top, d))
        )
        for name in sorted(files):
            path = os.path.join(top, name)
            if os.path.isfile(path) and not os.path.islink(path) and not ignore.excluded(_rel(rel_top, name)):
                found.append(_rel(rel_top, name))
    return found


def sync_plan(sync, run_root: str, cwd: str) -> SyncPlan:
    """The SyncPlan of a cluster's `sync:` section (its caller checks that there is one); a one-line KitError for a
    source that is not a directory, or a list too long to be code."""
    source = os.path.abspath(os.path.join(cwd, os.path.expanduser(sync.source or ".")))
    if not os.path.isdir(source):
        raise KitError(f"sync.source {source}: no such directory; give the local directory of your code")
    # kit's own run records, when they lie under the source (run_root as the records of this machine see it).
    skip_root = os.path.relpath(os.path.join(cwd, os.path.expanduser(run_root)), source)
    tracked = None if sync.include else _git_files(source)
    ignore, from_file, said = read_ignore(source, skip_root)
    if tracked is not None:
        # git's own ignore rules chose already: only a .kitignore written for sync narrows the list further.
        files, chosen_by = tracked, "the git-tracked files"
        if from_file:
            files, chosen_by = [f for f in files if not ignore.excluded(f)], f"{chosen_by}, {said}"
    else:
        files = _walk(source, skip_root, ignore)
        chosen_by = "the files matching sync.include" if sync.include else "every file (not a git checkout)"
        chosen_by += f", {said}"
        if sync.include:
            patterns = [glob_regex(p) for p in sync.include]
            files = [f for f in files if any(p.match(f) for p in patterns)]
    skipped = [glob_regex(p) for p in [*sync.exclude, *(f"{d}/" for d in ALWAYS_SKIPPED_DIRS)]]
    files = sorted(
        f
        for f in files
        if not any(p.match(f) for p in skipped) and f != skip_root and not f.startswith(skip_root + "/")
    )
    if sync.exclude:
        chosen_by += ", less sync.exclude"
    if len(files) > MAX_FILES:
        raise KitError(
            f"sync: {len(files)} files under {source}, more than code usually is ({MAX_FILES}); "
            f"narrow it with sync.include / sync.exclude or a .kitignore (a data directory?)"
        )
    return SyncPlan(source=source, files=tuple(files), chosen_by=chosen_by)


def check_script_synced(sync: SyncPlan, script: str, workdir: str) -> None:
    """A job's script that sync would leave behind (a new file git does not track yet, or one excluded) would
    not be on the hosts: one line saying so, rather than a run that fails there."""
    rel = script if not os.path.isabs(script) else os.path.relpath(script, sync.source)
    rel = os.path.normpath(rel).replace(os.sep, "/")
    if rel.startswith("../") or not os.path.isfile(os.path.join(sync.source, rel)):
        return  # not a file of the source: it is expected on the hosts already
    if rel not in sync.files:
        how = "git add it" if sync.chosen_by.startswith("the git-tracked") else "list it in sync.include"
        raise KitError(
            f"sync: the job's script {rel} is not among the files sync copies from {sync.source} "
            f"({sync.chosen_by}); {how}, or the hosts will not have it"
        )


__all__ = ["sync_plan", "check_script_synced", "glob_regex", "MAX_FILES"]
