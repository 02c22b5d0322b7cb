"""The launch's modules (render/modules.py): what each launcher needs, and the check program run by a real
interpreter on a sys.path without them (an empty directory of the name counts as missing)."""

import os
import subprocess
import sys

from launcher.planning.build import build_plan
from launcher.render import modules
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.overrides import Overrides


def _plan(**job):
    spec = JobSpec.model_validate({"name": "j", "entrypoint": {"script": "t.py"}, "nodes": 2, **job})
    cluster = ClusterSpec.model_validate({"name": "c", "backend": "slurm", "workdir": "/w", "gpus_per_node": 0})
    return build_plan(spec, cluster, Overrides(), "r1")


def test_each_launcher_needs_its_own_modules():
    assert modules.required(("py", "-m", "accelerate.commands.launch", "--x"), "ddp") == ("accelerate", "torch")
    assert modules.required(("py", "-m", "torch.distributed.run"), "fsdp") == ("torch",)
    assert modules.required(("py", "train.py"), "ddp") == ("torch",)   # a one-process node runs the script itself
    assert modules.required(("py", "-m", "accelerate.commands.launch"), "deepspeed") == ("accelerate", "torch",
                                                                                         "deepspeed")


def test_slurm_tasks_check_before_the_env_check_and_the_launcher():
    plan = _plan(launcher="torchrun")
    lines = plan.nodes[0].command.splitlines()
    check = next(i for i, ln in enumerate(lines) if "check_modules.py" in ln)
    assert lines[check].split()[:4] == ["python", "runs/r1/check_modules.py", '"${SLURM_NODEID}"', "torch"]
    assert "env_check.py" in lines[check + 1] and lines[check + 2].startswith("exec python -m torch.distributed.run")
    assert plan.files["runs/r1/check_modules.py"] == modules.program()


def test_the_program_names_the_missing_module_and_the_interpreter(tmp_path):
    path = tmp_path / "check_modules.py"
    path.write_text(modules.program())
    (tmp_path / "empty" / "accelerate").mkdir(parents=True)   # a directory of the name, no package in it
    env = {**os.environ, "SLURMD_NODENAME": "n2"}
    # -S and -I: no site-packages, no cwd or PYTHONPATH; the empty directory first on the path.
    argv = [sys.executable, "-S", "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path / 'empty')!r}); "
            f"sys.argv = [{str(path)!r}, '1', 'accelerate', 'json']; exec(open(sys.argv[0]).read())"]
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 2
    assert r.stderr == (f"kit: node 1 (n2): {sys.executable} has no module accelerate (pip install accelerate there, "
                        f"or point the cluster config's python: or setup: at an environment that has it)\n")
    ok = subprocess.run([sys.executable, str(path), "0", "json", "os"], capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and ok.stderr == ""


def test_a_python_not_found_is_said_in_one_line(tmp_path):
    line = modules.task_line(str(tmp_path / "no-such" / "python"), "runs/r", "1", ("torch",), ())
    r = subprocess.run(["bash", "-c", line], capture_output=True, text=True, env={**os.environ,
                                                                                  "SLURMD_NODENAME": "n2"})
    assert r.returncode == 127
    assert r.stderr.splitlines()[-1] == (f"kit: node 1 (n2): python {tmp_path}/no-such/python not found after the "
                                         f"setup lines; fix python: or setup: in the cluster config")
