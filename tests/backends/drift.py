"""Helpers for the environment drift tests: one host of the harness made to see another file at a path (a bind
mount in that host's own mount namespace), as a machine with another install would."""

import contextlib
import importlib.metadata
import os
import tempfile


def metadata_path(dist: str) -> str:
    """The METADATA file of an installed distribution (its Version header is what kit reads)."""
    return str(importlib.metadata.distribution(dist)._path / "METADATA")


def with_version(dist: str, version: str) -> str:
    """The distribution's METADATA text with another Version."""
    lines = open(metadata_path(dist), encoding="utf-8").read().splitlines(keepends=True)
    return "".join(f"Version: {version}\n" if ln.startswith("Version:") else ln for ln in lines)


@contextlib.contextmanager
def seen_on(host, path: str, text: str):
    """While inside, `host` (and only it) sees `text` at `path`."""
    fd, tmp = tempfile.mkstemp(prefix="kit-drift-", dir=os.path.dirname(host.dir))
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    host.run(["mount", "--bind", tmp, path])
    try:
        yield
    finally:
        host.run(["umount", path], check=False)
        os.unlink(tmp)


def package_dir(name: str) -> str:
    """Where this interpreter finds the package `name` (its directory)."""
    import importlib.util
    return os.path.dirname(importlib.util.find_spec(name).origin)


@contextlib.contextmanager
def emptied_on(host, path: str):
    """While inside, `host` (and only it) sees an empty directory at `path`: a package it no longer has, as on a
    machine whose environment lacks it."""
    empty = tempfile.mkdtemp(prefix="kit-empty-", dir=os.path.dirname(host.dir))
    host.run(["mount", "--bind", empty, path])
    try:
        yield
    finally:
        host.run(["umount", path], check=False)
        os.rmdir(empty)
