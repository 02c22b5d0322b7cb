"""The layout, measured on the tree: tests/ mirrors launcher/'s packages (each has a test directory of the same name
with tests in it), and no module of launcher/ or train/ grows past what one concept holds. The old 300-line limit
split concepts into fragments (issue 36: one concept per module, whole); 1,000 lines is a backstop against a
module that has become several, not a size to split at (TorchX's SLURM scheduler, one concept, is ~900)."""

import os

from tests.launcher.localrun import REPO

MAX_LINES = 1000


def test_every_package_of_launcher_has_its_test_directory():
    top = os.path.join(REPO, "launcher")
    packages = sorted(d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d))
                      and any(f.endswith(".py") for f in os.listdir(os.path.join(top, d))))
    assert {"backends", "core", "spec", "sweeps"} <= set(packages), packages
    missing = [p for p in packages if not _has_tests(os.path.join(REPO, "tests", p))]
    assert not missing, f"launcher packages without tests/<package>/test_*.py: {missing}"


def _has_tests(directory: str) -> bool:
    return os.path.isdir(directory) and any(f.startswith("test_") and f.endswith(".py") for f in os.listdir(directory))


def test_no_module_is_over_1000_lines():
    long = {}
    for top in ("launcher", "train"):
        for dirpath, _, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8") as f:
                        lines = sum(1 for _ in f)
                    if lines > MAX_LINES:
                        long[os.path.relpath(path, REPO)] = lines
    assert not long, f"each holds several concepts by now; split them by concept: {long}"
