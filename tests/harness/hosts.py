"""One test host: a network namespace plus its own mount, UTS and PID namespaces held open by a tini init.

Everything started on the host enters all four namespaces through that init (`nsenter -t <init> -n -m -u -p`), so
killing the init ends every process of the host at once (the kernel kills a PID namespace with its init).
Not `ip netns exec`: it remounts /sys, which hides the cgroup tree slurmd needs.
"""

import os
import signal
import subprocess
from dataclasses import dataclass

from tests.harness.daemons import pid_alive
from tests.harness.shell import HarnessError, log_tail, wait_until

# Runs inside the new namespaces: private /etc/hosts and hostname, a home directory of its own, then tini as PID 1
# for the host's lifetime. The home: the hosts share this machine's filesystem (a workdir there models NFS), but
# a login's rc files write into $HOME (here `pyenv rehash`, under a lock file in ~/.pyenv). Shared, every host's
# logins would queue on one lock, and a login killed mid-rehash when a host stops would leave the lock behind:
# every later login on the machine, the tests' own included, would wait 60 s for it. So each host sees $HOME
# through an overlay whose writes stay in its own directory, like separate machines installed from one image.
INIT_SCRIPT = ('mount --bind "$1" /etc/hosts && hostname "$2" && mkdir -p "$3/home" "$3/home.work" && '
               'mount -t overlay kit-home -o "lowerdir=$4,upperdir=$3/home,workdir=$3/home.work" "$4" && '
               'exec tini -s -- sleep infinity')


@dataclass
class Host:
    name: str          # hostname inside the host, and the SLURM node name
    address: str       # eth0 address, reachable from the root namespace and the other hosts
    netns: str         # `ip netns` name
    dir: str           # the host's private files (sshd config and keys, logs)
    init_pid: int      # tini, PID 1 of the host's PID namespace (pid as seen from the root namespace)
    pidns: int         # inode of the host's PID namespace: identifies its processes in /proc
    holder: subprocess.Popen  # `unshare`, parent of the init; killing it kills the init

    def nsenter(self, argv, cwd=None):
        """argv prefixed to run inside all of the host's namespaces."""
        # --wdns: cwd as the host sees it (--wd would resolve it here, before entering: past a disk of the host's own)
        wd = [f"--wdns={cwd}"] if cwd else []
        return ["nsenter", "-t", str(self.init_pid), "-n", "-m", "-u", "-p", *wd, "--", *argv]

    def run(self, argv, cwd=None, check=True, timeout=30, **kw):
        """Run a command on the host and wait: subprocess.run with text output captured by default."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(self.nsenter(argv, cwd), check=check, timeout=timeout, **kw)

    def popen(self, argv, cwd=None, **kw):
        """Start a command on the host without waiting (the returned pid is nsenter's, in the root namespace)."""
        return subprocess.Popen(self.nsenter(argv, cwd), **kw)

    def processes(self):
        """Every live process in the host's PID namespace: dicts with pid (root view), nspid and cmdline."""
        return [p for p in all_processes() if p["pidns"] == self.pidns]

    def stop(self):
        """Kill the init (and with it the whole PID namespace), then wait until none of its processes is left."""
        if pid_alive(self.init_pid):
            os.kill(self.init_pid, signal.SIGKILL)
        # unshare reaps the init and exits; killing it first would orphan the init to PID 1, which in some
        # containers never reaps, leaving a zombie tini behind.
        try:
            self.holder.wait(10)
        except subprocess.TimeoutExpired:
            self.holder.kill()
            self.holder.wait(5)
        wait_until(lambda: not self.processes(), f"the processes of host {self.name} to exit", timeout=10)


def start_host(name, address, netns, hosts_file, host_dir):
    """Start the host's init inside netns and wait until it runs tini with the hostname and /etc/hosts set."""
    log = os.path.join(host_dir, "init.log")
    argv = ["setpriv", "--pdeathsig", "KILL", "--", "nsenter", f"--net=/run/netns/{netns}",
            "unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child=SIGKILL", "--mount-proc",
            "--", "sh", "-c", INIT_SCRIPT, "sh", hosts_file, name, host_dir, os.path.expanduser("~")]
    with open(log, "ab") as out:
        holder = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)

    def init_ready():
        if holder.poll() is not None:
            raise HarnessError(f"init of host {name} exited {holder.returncode}{log_tail(log)}")
        child = _children(holder.pid)
        return child if child and _comm(child[0]) == "tini" else None

    init_pid = wait_until(init_ready, f"the init of host {name}", timeout=10, log=log)[0]
    pidns = os.stat(f"/proc/{init_pid}/ns/pid").st_ino
    return Host(name, address, netns, host_dir, init_pid, pidns, holder)


def all_processes():
    """Live processes with their PID-namespace inode, pid in the root namespace, pid inside their namespace."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            pidns = os.stat(f"/proc/{entry}/ns/pid").st_ino
            status = open(f"/proc/{entry}/status").read()
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue  # exited while we looked
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("State", "").startswith("Z"):
            continue
        nspid = int(fields.get("NSpid", entry).split()[-1])
        found.append({"pid": int(entry), "nspid": nspid, "pidns": pidns,
                      "cmdline": [c.decode(errors="replace") for c in cmdline if c]})
    return found


def _children(pid):
    try:
        return [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []


def _comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""
