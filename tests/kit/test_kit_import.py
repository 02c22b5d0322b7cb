"""`import kit` is the Python API's name: launcher's own objects, from anywhere, in an editable install and a wheel.
Installing kit puts kit's own packages (launcher, kit) on the path and never the repository's train/, which the nodes
run from their workdir (issue 36: a user project's own `train` package found kit's)."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_import_kit_outside_the_repo_gives_launchers_objects(tmp_path):
    code = ("import sys, kit, launcher, launcher.api as api; "
            "assert kit.submit is api.submit and kit.plan is api.plan and kit.sweep is api.sweep; "
            "assert kit.runs is api.runs_under and kit.get_run is api.get_run and kit.Run is api.Run; "
            "assert kit.KitError is launcher.KitError and kit.__version__ == launcher.__version__; "
            "from kit import submit; assert submit is api.submit; "
            "print(sorted(set(kit.__all__) - set(dir(kit))), 'torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "False"]


def test_import_kit_alone_imports_no_torch_and_no_schemas(tmp_path):
    result = subprocess.run([sys.executable, "-c", "import sys, kit; print(sorted(m for m in sys.modules if m in "
                             "('torch', 'accelerate', 'pydantic', 'launcher.api')))"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr


def test_python_dash_m_kit_is_the_kit_command(tmp_path):
    result = subprocess.run([sys.executable, "-m", "kit", "--version"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "kit 0.1.0"), result.stderr


def _project(tmp_path) -> Path:
    """The project's sources (its metadata and every top-level package setuptools could pick up) in a directory of
    their own: a build writes build/ and *.egg-info beside them, never in the checkout."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("launcher", "train", "kit"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    return src


def test_the_wheel_holds_kit_beside_launcher_and_not_train(tmp_path):
    src = _project(tmp_path)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src),
                             "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"kit/__init__.py", "kit/__main__.py", "launcher/__init__.py", "launcher/api.py",
            "launcher/supervise/watchdog.py"} <= set(names)
    # Only kit's packages at the top level: no file named kit that could shadow the command, no train/ that a
    # user's own `train` would collide with (the reference job is the repository's, run from the nodes' workdir).
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"kit", "launcher"}
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "kit = launcher.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_a_plain_editable_install_maps_kit_and_not_train(tmp_path):
    """setuptools' default editable mode (a plain `pip install -e .`) installs an import finder that maps the
    packages the project lists to the checkout, and nothing else: its wheel, built offline by setuptools' own hook
    (what pip runs without build isolation)."""
    src = _project(tmp_path)
    code = "import sys; from setuptools import build_meta; print(build_meta.build_editable(sys.argv[1]))"
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=src, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    with zipfile.ZipFile(tmp_path / result.stdout.split()[-1]) as wheel:
        (finder,) = [n for n in wheel.namelist() if n.endswith("_finder.py")]
        source = wheel.read(finder).decode()
    module: dict = {}
    exec(compile(source, finder, "exec"), module)   # defines the finder and its MAPPING; installs nothing
    assert module["MAPPING"] == {"launcher": str(src / "launcher"), "kit": str(src / "kit")}


def test_this_venv_finds_kit_and_not_train_outside_the_checkout(tmp_path):
    """The Python the tests run under (the Makefile's venv, or a user's editable install), started outside the
    checkout with no PYTHONPATH: kit's packages come from this checkout; `train` and the repository's other
    top-level directories are not importable. In the checkout, as a node in its workdir, `train` is."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    code = ("import importlib, os, launcher, kit, launcher.cli\n"
            "print(os.path.realpath(launcher.__file__)); print(os.path.realpath(kit.__file__))\n"
            "for top in ('train', 'tests', 'bench', 'tools'):\n"
            "    try:\n        print(top, os.path.realpath(importlib.import_module(top).__path__[0]))\n"
            "    except ModuleNotFoundError as e:\n        print(top, None if e.name == top else e)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    here = REPO.resolve()
    lines = result.stdout.splitlines()
    assert lines[:3] == [str(here / "launcher" / "__init__.py"), str(here / "kit" / "__init__.py"), "train None"], \
        result.stdout
    # Another distribution may have a top-level `tests` of its own; the checkout's is on no path.
    assert not [line for line in lines[3:] if str(here) in line], result.stdout
    result = subprocess.run([sys.executable, "-c", "import train.args; print(train.args.__file__)"], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, str(REPO / "train" / "args.py")), result.stderr
