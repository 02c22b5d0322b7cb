"""slurm.conf and slurmdbd.conf for a testbed: pure text from paths, ports and hosts."""

# Settings that work with namespace hosts on a machine without cgroup delegation: no cgroup-based tracking or
# accounting gathering, no mail, and no batch scheduling delay (else ~3 s per job).
FIXED = {
    "SlurmUser": "root",
    "SlurmdUser": "root",
    "AuthType": "auth/munge",
    "CredType": "cred/munge",
    "ProctrackType": "proctrack/linuxproc",
    "TaskPlugin": "task/none",
    "JobAcctGatherType": "jobacct_gather/none",
    "AccountingStorageType": "accounting_storage/slurmdbd",
    "JobCompType": "jobcomp/none",
    "SelectType": "select/cons_tres",
    "SelectTypeParameters": "CR_Core",
    "SchedulerParameters": "batch_sched_delay=0",
    "MailProg": "/bin/true",
    "MpiDefault": "none",
    "SwitchType": "switch/none",
    "ReturnToService": "2",
    "InactiveLimit": "0",
    "SlurmctldDebug": "info",
    "SlurmdDebug": "info",
}


def slurm_conf(cluster_name, controller, gateway, ports, state_dir, munge_socket, nodes, extra=None):
    """nodes: [(name, address)]. ports: dict slurmctld/slurmd/slurmdbd. extra: settings that override ours."""
    settings = {
        "ClusterName": cluster_name,
        "SlurmctldHost": f"{controller}({gateway})",
        "SlurmctldPort": ports["slurmctld"],
        "SlurmdPort": ports["slurmd"],
        "AuthInfo": f"socket={munge_socket}",
        # Where slurmctld and clients (sacct, also from inside a host) reach slurmdbd: the root namespace's
        # address on the test network.
        "AccountingStorageHost": gateway,
        "AccountingStoragePort": ports["slurmdbd"],
        "AccountingStoragePass": munge_socket,
        "StateSaveLocation": f"{state_dir}/state",
        "SlurmdSpoolDir": f"{state_dir}/spool/%n",
        "SlurmctldPidFile": f"{state_dir}/slurmctld.pid",
        "SlurmdPidFile": f"{state_dir}/slurmd-%n.pid",
        "SlurmctldLogFile": f"{state_dir}/slurmctld.log",
        "SlurmdLogFile": f"{state_dir}/slurmd-%n.log",
        **FIXED,
        **(extra or {}),
    }
    lines = [f"{k}={v}" for k, v in settings.items()]
    lines += [f"NodeName={name} NodeHostname={name} NodeAddr={addr} CPUs=2 RealMemory=1000 State=UNKNOWN"
              for name, addr in nodes]
    lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def slurmdbd_conf(controller, port, state_dir, munge_socket, mariadb_port):
    settings = {
        "AuthType": "auth/munge",
        "AuthInfo": f"socket={munge_socket}",
        "DbdHost": controller,
        "DbdPort": port,
        "SlurmUser": "root",
        "StorageType": "accounting_storage/mysql",
        "StorageHost": "127.0.0.1",
        "StoragePort": mariadb_port,
        "StorageUser": "root",
        "StorageLoc": "slurm_acct_db",
        "PidFile": f"{state_dir}/slurmdbd.pid",
        "LogFile": f"{state_dir}/slurmdbd.log",
        "DebugLevel": "info",
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())
