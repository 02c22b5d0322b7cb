"""The embedded local cluster fits the machine: --num_cpu_threads_per_process is sized from the usable cores
(read at the edge, passed in as the cluster's `cpus`) and the processes that share them, at least 1."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.errors import KitError
from launcher.spec import load_cluster
from tests.launcher.planning import LOCAL_CPU, LOCAL_GPU, SSH_GPU, cluster, job, plan

ROOT = Path(__file__).resolve().parents[2]
FLAG = "--num_cpu_threads_per_process"


def threads(p) -> list:
    """Each node's --num_cpu_threads_per_process (a one-process node, which has no launcher: its OMP_NUM_THREADS,
    as accelerate's launcher would set it), None where it is not passed."""
    def one(n):
        if FLAG in n.argv:
            return int(n.argv[n.argv.index(FLAG) + 1])
        return int(n.env["OMP_NUM_THREADS"]) if "OMP_NUM_THREADS" in n.env else None
    return [one(n) for n in p.nodes]


@pytest.fixture
def cores(monkeypatch):
    def set_cores(n):
        monkeypatch.setattr("launcher.backends.local.placement.os.sched_getaffinity", lambda pid: set(range(n)))
    return set_cores


def test_embedded_cluster_counts_usable_cores(cores):
    cores(6)
    spec = load_cluster(None)
    assert spec.cpus == 6 and spec.cpu_threads_per_process == "auto"


@pytest.mark.parametrize("cpus, nodes, procs, expected", [
    (16, 2, 2, 4), (16, 1, 1, 16), (2, 2, 1, 1), (2, 2, 2, 1), (1, 2, 1, 1), (7, 1, 2, 3),
])
def test_threads_split_the_cores_among_all_local_processes(cores, cpus, nodes, procs, expected):
    cores(cpus)
    p = plan(job(), load_cluster(None), nodes=nodes, procs_per_node=procs)
    assert threads(p) == [expected] * nodes


def test_cpu_count_is_read_at_the_edge_not_in_the_plan(monkeypatch):
    def no_reads(pid):
        raise AssertionError("the plan read the machine's cores")
    monkeypatch.setattr(os, "sched_getaffinity", no_reads)
    spec = cluster(LOCAL_CPU, cpu_threads_per_process="auto", cpus=8)
    assert threads(plan(job(), spec, nodes=2)) == [4, 4]


def test_auto_on_remote_nodes_divides_by_the_node_own_processes():
    ssh_cpu = {**SSH_GPU, "gpus_per_node": 0, "hosts": ["a", "b"], "cpu_threads_per_process": "auto", "cpus": 32}
    assert threads(plan(job(), cluster(ssh_cpu), nodes=2, procs_per_node=4)) == [8, 8]


@pytest.mark.parametrize("given", [{"cpu_threads_per_process": "auto"}, {}])
def test_without_cpus_each_remote_node_counts_its_own_cores_at_start(given):
    # No core count here: each node sizes OMP_NUM_THREADS (accelerate's --num_cpu_threads_per_process) from its
    # own `nproc`, split among its processes, instead of accelerate's guess from this machine's kind of host.
    ssh_cpu = {**SSH_GPU, "gpus_per_node": 0, "hosts": ["a", "b"], **given}
    p = plan(job(), cluster(ssh_cpu), nodes=2, procs_per_node=4)
    assert threads(p) == [None, None]
    for node in p.nodes:
        assert "kit_threads=$(( $(nproc 2>/dev/null || echo 1) / 4 ))" in node.command
        assert 'export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$kit_threads}"' in node.command


def test_gpu_nodes_and_given_threads_size_nothing_at_start():
    ssh_cpu = {**SSH_GPU, "gpus_per_node": 0, "hosts": ["a", "b"], "cpu_threads_per_process": 3}
    assert all("kit_threads" not in n.command for n in plan(job(), cluster(ssh_cpu), nodes=2).nodes)
    assert all("kit_threads" not in n.command for n in plan(job(), cluster(SSH_GPU), nodes=1).nodes)


def test_fixed_threads_and_gpu_nodes_are_unchanged(cores):
    assert threads(plan(job(), cluster(LOCAL_CPU), nodes=2)) == [1, 1]
    assert threads(plan(job(), cluster(LOCAL_GPU, cpus=64, cpu_threads_per_process="auto"), gpus=2)) == [None]
    assert threads(plan(job(), cluster({**LOCAL_CPU, "cpu_threads_per_process": None}))) == [None]


def test_local_cluster_file_gets_this_machine_cores(cores, tmp_path):
    cores(3)
    assert load_cluster(str(ROOT / "cluster_configs" / "local.yaml")).cpus == 3
    pinned = tmp_path / "c.yaml"
    pinned.write_text("name: box\nbackend: local\ncpus: 12\ncpu_threads_per_process: auto\n")
    assert load_cluster(str(pinned)).cpus == 12


def test_quick_start_dry_run_passes_sized_threads():
    # Without --cluster kit used to omit the flag: accelerate then gave every local node all the cores.
    result = subprocess.run([sys.executable, "-m", "launcher", "submit", "jobs/bert_cls.yaml", "--nodes", "2",
                             "--procs-per-node", "1", "--dry-run", "--format", "json", "--run-id", "r"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    expected = max(1, len(os.sched_getaffinity(0)) // 2)
    argvs = [node["argv"] for node in json.loads(result.stdout)["nodes"]]
    assert [argv[argv.index(FLAG) + 1] for argv in argvs if FLAG in argv] == [str(expected)] * 2, argvs
