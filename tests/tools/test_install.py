"""What installing kit puts on a user's sys.path: kit's own packages (launcher, kit), never the repository's top-level
train/ (issue 36: a user project's own `train` package found kit's). Checked three ways: the wheel built from the
project, the editable wheel a plain `pip install -e .` installs, and this venv (the Makefile's, or the user's
editable install) from a directory outside the checkout. The reference job still runs: its nodes run `python -m
train` from their workdir, where train/ sits at the top (tests/train, tests/backends)."""

import os
import shutil
import subprocess
import sys
import zipfile

from tests.launcher.localrun import REPO

# What setuptools reads to build: the project's metadata and every top-level package it could pick up.
_SOURCES = ("pyproject.toml", "README.md", "launcher", "kit", "train")


def _copy_project(dest) -> str:
    """The project's sources in `dest` (the build writes build/ and *.egg-info beside them, never in the checkout)."""
    for name in _SOURCES:
        src = os.path.join(REPO, name)
        if os.path.isdir(src):
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dest / name)
    return str(dest)


def _build(project: str, hook: str, out) -> str:
    """setuptools' PEP 517 `hook` (build_wheel, build_editable) run in `project`: the path of the wheel it wrote.
    Offline, with the setuptools of this venv (what pip would run without build isolation)."""
    code = f"import sys; from setuptools import build_meta; print(build_meta.{hook}(sys.argv[1]))"
    r = subprocess.run([sys.executable, "-c", code, str(out)], cwd=project, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return os.path.join(str(out), r.stdout.strip().splitlines()[-1])


def _tops(names) -> set:
    return {n.split("/", 1)[0] for n in names if "/" in n and ".dist-info/" not in n}


def test_the_wheel_carries_kit_and_not_train(tmp_path):
    (tmp_path / "src").mkdir()
    wheel = _build(_copy_project(tmp_path / "src"), "build_wheel", tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert _tops(names) == {"launcher", "kit"}, sorted(_tops(names))
    assert not [n for n in names if n.startswith("train/")]
    assert "launcher/supervise/watchdog.py" in names and "kit/__main__.py" in names
    assert "kit = launcher.cli:main" in entry_points


def test_a_plain_editable_install_maps_kit_and_not_train(tmp_path):
    """setuptools' default editable mode (a plain `pip install -e .`): an import finder that maps the packages the
    project lists, and nothing else, to the checkout."""
    (tmp_path / "src").mkdir()
    project = _copy_project(tmp_path / "src")
    wheel = _build(project, "build_editable", tmp_path)
    with zipfile.ZipFile(wheel) as z:
        [finder] = [n for n in z.namelist() if n.endswith("_finder.py")]
        source = z.read(finder).decode()
    namespace: dict = {}
    exec(compile(source, finder, "exec"), namespace)   # the finder module: MAPPING, and installs nothing on exec
    assert namespace["MAPPING"] == {"launcher": os.path.join(project, "launcher"),
                                    "kit": os.path.join(project, "kit")}


def test_this_venv_imports_kit_and_not_train_outside_the_checkout(tmp_path):
    """This venv's Python, started outside the checkout (no PYTHONPATH): kit's packages import, from this checkout;
    a user's `import train` does not find the repository's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    code = ("import launcher, kit, launcher.cli, os, sys\n"
            "print(os.path.realpath(launcher.__file__)); print(os.path.realpath(kit.__file__))\n"
            "try:\n    import train\nexcept ModuleNotFoundError as e:\n    print('no train:', e.name)\n"
            "else:\n    print('train from', train.__file__)\n"
            "for top in ('tests', 'bench', 'tools'):\n"
            "    try:\n        __import__(top)\n    except ModuleNotFoundError:\n        pass\n"
            "    else:\n        print(top, 'from', sys.modules[top].__file__)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [os.path.join(os.path.realpath(REPO), "launcher", "__init__.py"),
                                     os.path.join(os.path.realpath(REPO), "kit", "__init__.py"),
                                     "no train: train"], r.stdout
    # In the checkout, as the nodes run it from their workdir, the reference module is there.
    r = subprocess.run([sys.executable, "-c", "import train.args; print(train.args.__file__)"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == os.path.join(REPO, "train", "args.py"), r.stderr
