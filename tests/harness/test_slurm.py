"""The SLURM cluster is real: a 2-node batch job runs one task per host, and accounting records it."""

import os
import time

from launcher.spec import load_cluster
from tests.harness.configs import slurm_cluster_config
from tests.harness.shell import wait_until


def submit(cluster, workdir, *args):
    out = cluster.run(["sbatch", "--parsable", f"--chdir={workdir}", f"--output={workdir}/slurm-%j.out",
                       *args]).stdout
    return out.strip().split(";")[0]


def accounted(cluster, job_id):
    """(State, ExitCode) from sacct once the job's end is recorded, as sacct (and submitit) sees it.

    Wait for End, not for a final-looking State: slurmdbd can insert a job's row at completion with its final
    State but no exit code and no end time yet (the start record written late), so FAILED|0:0 is briefly seen.
    """
    def ended():
        out = cluster.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode,End"]).stdout.strip()
        row = out.split("|") if out else None
        return tuple(row[:2]) if row and row[2] not in ("Unknown", "None", "") else None
    return wait_until(ended, f"job {job_id}'s end in sacct", timeout=30, interval=0.2)


def test_two_node_job_runs_one_task_on_each_host(slurm_cluster, tmp_path):
    job = submit(slurm_cluster, tmp_path, "--nodes=2", "--ntasks-per-node=1",
                 "--wrap", "srun sh -c 'echo $(hostname) $SLURM_NODEID $SLURM_JOB_NUM_NODES'")
    assert accounted(slurm_cluster, job) == ("COMPLETED", "0:0")
    lines = sorted((tmp_path / f"slurm-{job}.out").read_text().splitlines())
    assert lines == ["n1 0 2", "n2 1 2"]


def test_a_failing_job_is_accounted_as_failed(slurm_cluster, tmp_path):
    job = submit(slurm_cluster, tmp_path, "--nodes=1", "--wrap", "exit 3")
    assert accounted(slurm_cluster, job) == ("FAILED", "3:0")


def test_clients_inside_a_host_find_the_cluster_without_slurm_conf(slurm_cluster):
    # What a login host reached over SSH sees: /etc/slurm there is the harness's configuration.
    host = slurm_cluster.bed.hosts[0]
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    out = host.run(["sinfo", "-h", "-o", "%P %D %t"], env=env).stdout.split()
    assert out == [f"{slurm_cluster.partition}*", "2", "idle"]


def test_slurm_conf_is_exported_and_kit_config_loads(slurm_cluster, tmp_path):
    assert os.environ["SLURM_CONF"] == slurm_cluster.conf
    spec = load_cluster(slurm_cluster_config(slurm_cluster, tmp_path / "cluster.yaml"))
    assert spec.backend == "slurm" and spec.slurm.partition == slurm_cluster.partition


def test_scancel_ends_a_running_job(slurm_cluster, tmp_path):
    job = submit(slurm_cluster, tmp_path, "--nodes=2", "--wrap", "srun sleep 300")
    wait_until(lambda: slurm_cluster.run(["squeue", "-h", "-j", job, "-o", "%T"]).stdout.strip() == "RUNNING",
               f"job {job} to run", timeout=20)
    started = time.monotonic()
    slurm_cluster.run(["scancel", job])
    assert accounted(slurm_cluster, job)[0].startswith("CANCELLED")
    assert time.monotonic() - started < 15
    for host in slurm_cluster.bed.hosts:
        wait_until(lambda: not [p for p in host.processes() if p["cmdline"][:2] == ["sleep", "300"]],
                   f"the job's sleep on {host.name} to end", timeout=15)
