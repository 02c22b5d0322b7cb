"""Paths inside a spec that kit reads at submit time resolve against the spec file's directory, not the directory
kit is started from; errors show the absolute path tried. `entrypoint.script` is the nodes' path (see README)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.errors import KitError
from launcher.spec import load_job, load_user_deepspeed

FIXTURES = Path(__file__).resolve().parent / "bad_inputs"


@pytest.fixture
def specs(tmp_path) -> Path:
    """tmp/specs/ holds job_ds.yaml (config_file: ds_good.json) and the JSON beside it; tmp/ is the cwd, the local
    nodes' workdir, where their script is (the dry-run checks it there)."""
    folder = tmp_path / "specs"
    folder.mkdir()
    for name in ("job_ds.yaml", "ds_good.json", "job_ds_missing.yaml", "job.yaml"):
        shutil.copy(FIXTURES / name, folder / name)
    shutil.copy(FIXTURES / "start_marker.py", tmp_path / "start_marker.py")
    return folder


def kit(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "launcher", "submit", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def test_deepspeed_file_is_found_beside_the_job_file(specs, monkeypatch):
    monkeypatch.chdir(specs.parent)
    spec = load_job("specs/job_ds.yaml")
    assert spec.deepspeed.config_file == str(specs / "ds_good.json")
    assert load_user_deepspeed(spec)["train_micro_batch_size_per_gpu"] is not None


def test_dry_run_from_another_directory_reads_the_spec_relative_json(specs):
    result = kit("specs/job_ds.yaml", "--dry-run", "--run-id", "r", cwd=specs.parent)
    assert result.returncode == 0, result.stderr
    assert "deepspeed.json" in result.stdout


def test_missing_json_error_shows_the_absolute_path_tried(specs):
    result = kit("specs/job_ds_missing.yaml", "--dry-run", "--run-id", "r", cwd=specs.parent)
    assert result.returncode == 2
    assert result.stderr == f"kit: error: deepspeed.config_file {specs}/missing_ds.json: no such file (check the path)\n"


def test_absolute_path_is_kept(specs, tmp_path):
    text = (specs / "job_ds.yaml").read_text().replace("ds_good.json", str(specs / "ds_good.json"))
    (tmp_path / "abs.yaml").write_text(text)
    assert load_job(str(tmp_path / "abs.yaml")).deepspeed.config_file == str(specs / "ds_good.json")


def test_set_path_is_relative_to_the_current_directory(specs, monkeypatch):
    # A path typed on the command line means what the shell means: relative to where kit runs.
    monkeypatch.chdir(specs.parent)
    result = kit("specs/job_ds.yaml", "--set", "deepspeed.config_file=elsewhere.json", "--dry-run", "--run-id", "r",
                 cwd=specs.parent)
    assert result.returncode == 2
    assert f"deepspeed.config_file {specs.parent}/elsewhere.json: no such file" in result.stderr
    result = kit("specs/job_ds.yaml", "--set", "deepspeed.config_file=specs/ds_good.json", "--dry-run",
                 "--run-id", "r", cwd=specs.parent)
    assert result.returncode == 0, result.stderr


def test_user_deepspeed_error_is_absolute_even_for_a_relative_spec_value(specs, monkeypatch):
    from launcher.spec import JobSpec
    monkeypatch.chdir(specs)
    spec = JobSpec.model_validate({"name": "t", "entrypoint": {"module": "m"}, "strategy": "deepspeed",
                                   "deepspeed": {"config_file": "nope.json"}})
    with pytest.raises(KitError, match=f"^deepspeed.config_file {specs}/nope.json: no such file"):
        load_user_deepspeed(spec)


def test_entrypoint_script_stays_the_nodes_path(specs):
    # The nodes run the script from the cluster's workdir (on SSH/SLURM hosts kit never sees), so kit does not
    # rebase it onto the job file's directory.
    spec = load_job(str(specs / "job.yaml"))
    assert spec.entrypoint.script == "start_marker.py"
