"""`import kit` is the Python API's name: launcher's own objects, from anywhere, in an editable install and a wheel."""

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


def test_the_wheel_holds_kit_beside_launcher(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("launcher", "train", "kit"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src),
                             "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"kit/__init__.py", "kit/__main__.py", "launcher/__init__.py", "launcher/api.py"} <= set(names)
    # Only the packages at the top level (no file named kit that could shadow the command); the command is kit's.
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"kit", "launcher", "train"}
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "kit = launcher.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
