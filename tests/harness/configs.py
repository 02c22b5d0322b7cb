"""kit cluster configs (cluster_configs/*.yaml format) pointing at a running harness.

Every host sees the same filesystem, so a workdir under the testbed dir is a shared filesystem, as on a real
cluster with NFS; for separate disks pass a workdir= on a disk of each host's own (disks.py, fixture ssh_own_disks).
"""

import os

import yaml

from tests.train.launch import link_reference_module


def ssh_cluster_config(ssh, path, name="harness-ssh", **fields):
    """Write an ssh cluster config for the hosts of `ssh` (an SshHosts); fields override or add top-level keys
    (workdir, python, setup, env, ...). Returns path."""
    config = {
        "name": name,
        "backend": "ssh",
        "hosts": [{"name": h.name, "address": h.address} for h in ssh.hosts],
        "workdir": _workdir(ssh.bed),
        "ssh": {"user": ssh.user, "port": 22, "identity_file": ssh.identity_file,
                "known_hosts": ssh.known_hosts, "connect_timeout": 5.0},
    }
    return _write(path, {**config, **fields})


def slurm_cluster_config(cluster, path, name="harness-slurm", **fields):
    """Write a slurm cluster config for `cluster` (a SlurmCluster). Clients find the cluster through
    SLURM_CONF (cluster.conf), which the slurm_cluster fixture exports. Returns path."""
    config = {
        "name": name,
        "backend": "slurm",
        "workdir": _workdir(cluster.bed),
        "slurm": {"partition": cluster.partition},
    }
    return _write(path, {**config, **fields})


def _workdir(bed):
    """The cluster's workdir, where its nodes run: as a user's, it holds the code the jobs run, here the reference
    module `train/` (a link to this checkout's), which `python -m train` finds from there: installing kit puts no
    `train` on any path (issue 36)."""
    path = bed.path("work")
    os.makedirs(path, exist_ok=True)
    link_reference_module(path)
    return path


def _write(path, config):
    with open(path, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return str(path)
