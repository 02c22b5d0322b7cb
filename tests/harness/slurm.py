"""A real SLURM cluster on a testbed: munged, MariaDB, slurmdbd and slurmctld in the root namespace, one
`slurmd -N <host>` inside each host. Clients (sbatch, srun, sacct, scontrol) need only SLURM_CONF=cluster.conf.
"""

import os
import signal
import subprocess
from dataclasses import dataclass, field

from tests.harness.daemons import environ_without, start_daemon
from tests.harness.mariadb import start_mariadb
from tests.harness.munge import start_munge
from tests.harness.shell import HarnessError, log_tail, sh, wait_until
from tests.harness.slurm_conf import slurm_conf, slurmdbd_conf

CLUSTER_NAME = "kit"
PARTITION = "debug"


@dataclass
class SlurmCluster:
    bed: object                    # the Testbed whose hosts run slurmd
    conf: str                      # slurm.conf path: export SLURM_CONF=conf for every client
    state_dir: str                 # logs (slurmctld.log, slurmd-<node>.log, slurmdbd.log), state, spool
    partition: str = PARTITION
    daemons: list = field(default_factory=list)   # root-namespace Daemons, in start order
    slurmd_pids: dict = field(default_factory=dict)  # node name -> slurmd pid (root namespace view)

    @property
    def env(self):
        """Our environment plus SLURM_CONF: pass as env= to sbatch/srun/sacct/scontrol."""
        return {**os.environ, "SLURM_CONF": self.conf}

    @property
    def nodes(self):
        return [h.name for h in self.bed.hosts]

    def run(self, argv, check=True, timeout=30):
        """Run a SLURM client command in the root namespace against this cluster; returns CompletedProcess."""
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, check=check, timeout=timeout)

    def stop(self):
        """slurmd on each host by recorded pid, then the root-namespace daemons in reverse start order."""
        for pid in self.slurmd_pids.values():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.slurmd_pids.clear()
        for daemon in reversed(self.daemons):
            # slurmctld spends ~2 s saving state on TERM; nothing here outlives the session, so do not wait.
            daemon.stop(grace=0.3)
        self.daemons.clear()


def start_slurm(bed, extra_conf=None):
    """Bring the cluster up and wait until every node is idle. extra_conf: slurm.conf settings to override."""
    state = bed.path("slurm")
    etc = os.path.join(state, "etc")
    spools = [os.path.join(state, "spool", h.name) for h in bed.hosts]
    for d in (etc, os.path.join(state, "state"), *spools):
        os.makedirs(d)
    ports = {"slurmctld": bed.slot.port(0), "slurmd": bed.slot.port(1), "slurmdbd": bed.slot.port(2)}
    cluster = SlurmCluster(bed, os.path.join(etc, "slurm.conf"), state)
    try:
        munged, munge_socket = start_munge(bed)
        cluster.daemons.append(munged)
        cluster.daemons.append(start_mariadb(bed, bed.slot.port(3)))
        _write_confs(cluster, ports, munge_socket, extra_conf)
        _bind_conf_on_hosts(cluster)
        _start_controllers(cluster, ports)
        for host in bed.hosts:
            cluster.slurmd_pids[host.name] = _start_slurmd(cluster, host)
        _wait_idle(cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _write_confs(cluster, ports, munge_socket, extra_conf):
    bed, state = cluster.bed, cluster.state_dir
    nodes = [(h.name, h.address) for h in bed.hosts]
    with open(cluster.conf, "w") as f:
        f.write(slurm_conf(CLUSTER_NAME, bed.controller, bed.gateway, ports, state, munge_socket, nodes,
                           extra_conf))
    # slurmdbd reads slurmdbd.conf next to slurm.conf and refuses it unless it is private to SlurmUser.
    dbd_conf = os.path.join(os.path.dirname(cluster.conf), "slurmdbd.conf")
    fd = os.open(dbd_conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(slurmdbd_conf(bed.controller, ports["slurmdbd"], state, munge_socket, bed.slot.port(3)))


def _bind_conf_on_hosts(cluster):
    """Inside each host, /etc/slurm is our etc dir: clients there (`ssh n1 sbatch ...`, a login host) need no
    SLURM_CONF. The host's mount namespace is private, so the root namespace's /etc/slurm is untouched."""
    for host in cluster.bed.hosts:
        host.run(["mount", "--bind", os.path.dirname(cluster.conf), "/etc/slurm"])


def _start_controllers(cluster, ports):
    """slurmdbd (must answer before slurmctld registers with it), then slurmctld; both in the foreground.
    slurmctld adds its cluster to the empty accounting database itself: no `sacctmgr add cluster` needed."""
    env = {**environ_without("SLURM_CONF"), "SLURM_CONF": cluster.conf}
    log = os.path.join(cluster.state_dir, "slurmdbd.log")
    dbd = start_daemon("slurmdbd", ["slurmdbd", "-D"], log, env=env, console=log + ".console")
    cluster.daemons.append(dbd)
    wait_until(lambda: _alive_and(dbd, lambda: _sacctmgr_ok(cluster)), "slurmdbd", log=log)
    log = os.path.join(cluster.state_dir, "slurmctld.log")
    ctld = start_daemon("slurmctld", ["slurmctld", "-D", "-i"], log, env=env, console=log + ".console",
                        own_pidns=True)
    cluster.daemons.append(ctld)
    wait_until(lambda: _alive_and(ctld, lambda: "UP" in sh(["scontrol", "ping"], check=False, env=env)),
               "slurmctld to answer `scontrol ping`", log=log)


def _start_slurmd(cluster, host):
    """slurmd inside the host (nsenter, not `ip netns exec`); it daemonizes and the host's tini adopts it."""
    env = {**environ_without("SLURM_CONF"), "SLURM_CONF": cluster.conf}
    proc = host.run(["slurmd", "-N", host.name], env=env, check=False)
    log = os.path.join(cluster.state_dir, f"slurmd-{host.name}.log")
    if proc.returncode != 0:
        raise HarnessError(f"slurmd on {host.name} exited {proc.returncode}: {proc.stderr.strip()}{log_tail(log)}")
    pidfile = os.path.join(cluster.state_dir, f"slurmd-{host.name}.pid")
    nspid = int(wait_until(lambda: _read(pidfile), f"slurmd's pid file on {host.name}", log=log))
    return next(p["pid"] for p in host.processes() if p["nspid"] == nspid)


def _wait_idle(cluster):
    def states():
        out = cluster.run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False).stdout.split()
        return dict(zip(out[::2], out[1::2]))

    what = f"nodes {cluster.nodes} to be idle"
    log = os.path.join(cluster.state_dir, "slurmctld.log")
    wait_until(lambda: all(states().get(n) == "idle" for n in cluster.nodes), what, log=log)


def _sacctmgr_ok(cluster):
    env = {**environ_without("SLURM_CONF"), "SLURM_CONF": cluster.conf}
    return subprocess.run(["sacctmgr", "-n", "show", "cluster"], env=env, capture_output=True).returncode == 0


def _alive_and(daemon, probe):
    daemon.check_alive()
    return probe()


def _read(path):
    try:
        return open(path).read().strip()
    except OSError:
        return ""
