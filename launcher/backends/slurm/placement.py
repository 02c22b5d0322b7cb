"""How the planner places a SLURM run: the allocation picks the hosts, so each task resolves its rank and the head
node's address itself; the nodes are submitted as one sbatch script (and a sweep as one job array)."""

from launcher.backends.slurm.options import SlurmOptions, login_fields
from launcher.planning.model import Submission
from launcher.planning.placement import Lanes, Placement
from launcher.render.shell import runtime_ref
from launcher.render.slurm import MASTER_ADDR_PRELUDE, sbatch_script
from launcher.spec.cluster import ClusterSpec, Host
from launcher.spec.job import JobSpec
from launcher.transport.options import SshOptions, check_key_files


class SlurmPlacement(Placement):
    name = "slurm"
    sections = {"slurm": SlurmOptions, "ssh": SshOptions}
    runtime_vars = ("SLURM_NODEID", "KIT_MASTER_ADDR")
    prelude = (MASTER_ADDR_PRELUDE,)
    lanes_own_ports = False  # every array task is an allocation of its own
    restarts_in_place = True  # a restart is a requeue: the same script, resolved again in a new allocation
    task_checks = True  # each task's python has the launch's modules (check_modules.py), before the env check
    env_check_where = "task"  # the tasks meet in the shared run directory (env_check.py) before training

    def check_cluster(self, cluster: ClusterSpec) -> None:
        if cluster.hosts:
            raise ValueError("a slurm cluster takes its hosts from the allocation: remove hosts")
        login_host = cluster.slurm.login_host if cluster.slurm is not None else None
        if cluster.ssh is not None and login_host is None:
            raise ValueError("ssh: section given but slurm.login_host is not set (ssh: says how to reach it)")
        if cluster.gpu_ids is not None:
            raise ValueError(f"gpu_ids: only a local cluster picks GPU ids, not a {self.name} cluster; remove it")

    def code_here(self, plan, cluster: ClusterSpec, cwd: str):
        """Without a login host the SLURM commands run here, on the filesystem the nodes share: their workdir."""
        if self._logs_in(cluster):
            return None
        import os

        return os.path.normpath(os.path.join(cwd, cluster.workdir))

    def _logs_in(self, cluster: ClusterSpec) -> bool:
        return cluster.slurm is not None and cluster.slurm.login_host is not None

    def check_files(self, cluster: ClusterSpec) -> None:
        if self._logs_in(cluster):
            check_key_files(cluster.ssh)

    def hosts(self, job: JobSpec, cluster: ClusterSpec) -> tuple[Host, ...]:
        # Placeholders: the allocation decides.
        return tuple(Host(name=f"slurm-node-{i}") for i in range(job.nodes))

    def health_scope(self, cluster: ClusterSpec):
        return () if cluster.slurm is not None and cluster.slurm.exclude_failed_nodes else None

    def away_from(self, job: JobSpec, cluster: ClusterSpec, failed: dict):
        """With slurm.exclude_failed_nodes, the nodes that failed lately join slurm.exclude (`--exclude`)."""
        s = cluster.slurm
        if not failed or s is None or not s.exclude_failed_nodes:
            return cluster, ()
        from launcher.planning.health import excluded_note

        names = sorted(n for n in failed if n not in s.exclude)
        slurm = s.model_copy(update={"exclude": sorted({*s.exclude, *names})})
        note = excluded_note(names, failed)
        return cluster.model_copy(update={"slurm": slurm}), (note,) if note else ()

    def _where(self, host: Host, cluster: ClusterSpec) -> str:
        return f"cluster '{cluster.name}'"

    def master(self, hosts) -> str:
        return runtime_ref("KIT_MASTER_ADDR")

    def rank_word(self, rank: int) -> str:
        return runtime_ref("SLURM_NODEID")

    def config_file(self, run_dir: str, rank: int) -> str:
        # One file for every task: its rank comes from $SLURM_NODEID on the command line.
        return f"{run_dir}/accelerate.yaml"

    def submission(self, cluster, *, run_id, job_name, nodes, gpus, run_dir, node_command):
        script_path = f"{run_dir}/job.sbatch"
        script = sbatch_script(
            cluster,
            run_id=run_id,
            job_name=job_name,
            nodes=nodes,
            gpus=gpus,
            run_dir=run_dir,
            workdir=cluster.workdir,
            node_command=node_command,
        )
        return {script_path: script}, Submission(kind="sbatch", argv=("sbatch", "--parsable", script_path))

    def binding(self, cluster: ClusterSpec, job: JobSpec) -> dict:
        from launcher.preflight.entrypoint import EntrypointRef
        from launcher.render.slurm import DEFAULT_MAX_REQUEUES

        slurm = cluster.slurm
        return {
            "login": login_fields(cluster),
            "workdir": cluster.workdir,
            "max_requeues": slurm.max_requeues if slurm is not None else DEFAULT_MAX_REQUEUES,
            "partition": slurm.partition if slurm is not None else None,
            "entrypoint": EntrypointRef(job.entrypoint.module, job.entrypoint.script),
        }

    def lanes(self, cluster: ClusterSpec, jobs: list[JobSpec], parallel: int) -> Lanes:
        # The job array's `%parallel` runs trials side by side; every lane keeps the cluster as it is.
        count = min(parallel, len(jobs))
        return Lanes((cluster,) * count, ("",) * count)

    def array_plan(self, sweep_id: str, parallel: int, trials):
        from launcher.backends.slurm.array_script import array_plan

        return array_plan(sweep_id, parallel, trials)


PLACEMENT = SlurmPlacement()
