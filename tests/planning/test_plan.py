"""The plan is a pure function: deterministic, no I/O, inputs untouched."""

import copy
import os
import sys
import threading

import pytest

from launcher.errors import KitError
from launcher.planning.build import build_plan
from launcher.planning.model import from_dict
from launcher.spec import ClusterSpec, JobSpec, Overrides

JOB = JobSpec(name="j", entrypoint={"module": "train"}, args=["--lr", "1e-3"], nodes=2, strategy="deepspeed",
              mixed_precision="bf16", env={"A": "1", "HF_TOKEN": "s3cret"})
SSH = ClusterSpec(name="c", backend="ssh", gpus_per_node=4,
                  hosts=[{"name": "a", "address": "10.9.0.1"}, "b", "c"], ssh={"user": "u"})
SLURM = ClusterSpec(name="s", backend="slurm", gpus_per_node=8, slurm={"partition": "gpu"})


def test_deterministic_and_serialisable():
    one = build_plan(JOB, SSH, Overrides(), "run-1")
    two = build_plan(JOB, SSH, Overrides(), "run-1")
    assert one == two
    assert from_dict(one.to_dict()) == one


def test_inputs_are_not_mutated():
    job, cluster = copy.deepcopy(JOB), copy.deepcopy(SSH)
    build_plan(JOB, SSH, Overrides(nodes=3, sets=("deepspeed.zero_stage=3", "cluster.workdir=/w")), "r")
    assert JOB == job and SSH == cluster


class _Forbidden(dict):
    """os.environ stand-in: any read at all fails the test."""

    def _no(self, *a, **k):
        raise AssertionError("the plan must not read the environment")

    __getitem__ = __contains__ = __iter__ = __len__ = get = keys = items = values = copy = _no


_PLANNING = threading.local()
_IO_EVENTS = ("open", "os.listdir", "os.scandir", "os.stat", "os.walk", "subprocess.Popen", "os.system",
              "os.exec", "os.posix_spawn", "socket.connect", "socket.bind", "socket.getaddrinfo",
              "socket.gethostname", "shutil.copyfile", "os.mkdir", "os.remove", "os.rename")


def _audit(event, args):
    if getattr(_PLANNING, "on", False) and event.startswith(_IO_EVENTS):
        raise AssertionError(f"the plan must not do I/O: {event} {args[:1]}")


sys.addaudithook(_audit)  # audit hooks cannot be removed: this one acts only inside `planning` below


@pytest.mark.parametrize("cluster", [SSH, SLURM, ClusterSpec(name="l", backend="local", cpus=8,
                                                              cpu_threads_per_process="auto")],
                         ids=["ssh", "slurm", "local"])
def test_no_io_no_subprocess_no_environment(monkeypatch, cluster):
    def forbidden(*a, **k):
        raise AssertionError("the plan must not ask the machine")
    monkeypatch.setattr(os, "environ", _Forbidden())
    for name in ("cpu_count", "sched_getaffinity", "getcwd", "getpid", "uname"):
        monkeypatch.setattr(os, name, forbidden)
    job = JOB if cluster.backend != "local" else JOB.model_copy(update={"strategy": "ddp",
                                                                        "mixed_precision": "no"})
    _PLANNING.on = True
    try:
        plan = build_plan(job, cluster, Overrides(nodes=2, sets=("env.X=1",)), "r")
    finally:
        _PLANNING.on = False
    assert plan.files and plan.nodes[0].command


def test_purity_guard_would_catch_io():
    _PLANNING.on = True
    try:
        with pytest.raises(AssertionError, match="must not do I/O"):
            open(__file__).close()
    finally:
        _PLANNING.on = False


def test_ranks_hosts_and_master():
    plan = build_plan(JOB, SSH, Overrides(), "r")
    assert [(n.machine_rank, n.host) for n in plan.nodes] == [(0, "a"), (1, "b")]
    assert plan.world.master_addr == "10.9.0.1"
    assert plan.world.world_size == 8
    for node in plan.nodes:
        argv = list(node.argv)
        assert argv[argv.index("--machine_rank") + 1] == str(node.machine_rank)
        assert argv[argv.index("--main_process_ip") + 1] == "10.9.0.1"


def test_port_derived_from_run_id_within_range():
    ports = {build_plan(JOB, SSH, Overrides(), f"run-{i}").world.master_port for i in range(40)}
    assert len(ports) > 30
    assert all(29500 <= p < 30500 for p in ports)
    assert build_plan(JOB, SSH, Overrides(master_port=31000), "run-1").world.master_port == 31000


def test_slurm_rank_and_master_resolved_inside_each_task():
    plan = build_plan(JOB, SLURM, Overrides(), "r")
    script = plan.files["runs/r/job.sbatch"]
    node = plan.nodes[0]
    assert '--machine_rank "${SLURM_NODEID}"' in node.command
    assert '--main_process_ip "${KIT_MASTER_ADDR}"' in node.command
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST"' in node.command
    # In the script the whole node command sits in single quotes: the batch shell expands nothing.
    srun_line = next(line for line in script.splitlines() if line.startswith("srun "))
    assert srun_line.split(" bash -c ", 1)[1].startswith("'")
    assert plan.submission.argv == ("sbatch", "--parsable", "runs/r/job.sbatch")


def test_secret_values_stay_out_of_commands_and_files():
    for cluster in (SSH, SLURM):
        plan = build_plan(JOB, cluster, Overrides(), "r")
        assert all("s3cret" not in n.command and "s3cret" not in " ".join(n.argv) for n in plan.nodes)
        assert all("s3cret" not in content for content in plan.files.values())
        assert plan.nodes[0].secret_env == ("HF_TOKEN",)


def test_cpu_ddp_forms_a_world_not_multi_cpu():
    job = JobSpec(name="j", entrypoint={"module": "m"}, nodes=2, procs_per_node=2)
    plan = build_plan(job, ClusterSpec(name="l", backend="local"), Overrides(), "r")
    node = plan.nodes[1]
    assert "--multi_gpu" in node.argv and "--cpu" not in node.argv
    assert node.env["ACCELERATE_USE_CPU"] == "1"
    assert "distributed_type: MULTI_GPU" in plan.files["runs/r/accelerate.node1.yaml"]
    assert plan.world.world_size == 4


def test_cpu_deepspeed_keeps_deepspeed():
    job = JobSpec(name="j", entrypoint={"module": "m"}, nodes=1, procs_per_node=2, strategy="deepspeed")
    node = build_plan(job, ClusterSpec(name="l", backend="local"), Overrides(), "r").nodes[0]
    assert "ACCELERATE_USE_CPU" not in node.env and "--use_deepspeed" in node.argv


def test_bad_run_id_rejected():
    with pytest.raises(KitError, match="run id"):
        build_plan(JOB, SSH, Overrides(), "../escape")


def test_local_gpu_nodes_take_their_own_gpu_slice():
    job = JobSpec(name="j", entrypoint={"module": "m"}, nodes=2, gpus_per_node=2)
    plan = build_plan(job, ClusterSpec(name="w", backend="local", gpus_per_node=4), Overrides(), "r")
    slices = [n.argv[n.argv.index("--gpu_ids") + 1] for n in plan.nodes]
    assert slices == ["0,1", "2,3"]
    with pytest.raises(KitError, match="need 6 GPUs but this machine has 4"):
        build_plan(job, ClusterSpec(name="w", backend="local", gpus_per_node=4), Overrides(nodes=3), "r")
