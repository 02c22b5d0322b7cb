"""What a harness leaves on the machine: found by its own names, paths and namespaces, never by process name.

A harness owns: processes in its hosts' PID namespaces, processes whose command line or environment names its
temp dir (every daemon's config lives there; slurmctld and slurmdbd find theirs through SLURM_CONF), network
namespaces and the root link named after its slot, the guard route for its subnet, mounts naming either, its
temp dir and its lock file.
"""

import os
from dataclasses import dataclass

from tests.harness.hosts import all_processes
from tests.harness.shell import sh
from tests.harness.slots import netns_names


@dataclass(frozen=True)
class Footprint:
    prefix: str
    subnet: str
    root_link: str
    dir: str
    lock_path: str
    pidns: frozenset


def footprint(bed):
    """Record what to look for before the testbed goes away."""
    slot = bed.slot
    return Footprint(slot.prefix, slot.subnet, slot.root_link, bed.dir, slot.lock_path,
                     frozenset(h.pidns for h in bed.hosts))


def leftovers(fp):
    """Human-readable descriptions of everything of the harness still present; [] when it is all gone."""
    found = [f"process {p['pid']} {' '.join(p['cmdline'])[:120]}" for p in _processes(fp)]
    found += [f"network namespace {ns}" for ns in netns_names(fp.prefix)]
    if sh(["ip", "link", "show", fp.root_link], check=False).strip():
        found.append(f"link {fp.root_link}")
    found += [f"route {r}" for r in sh(["ip", "route", "show", "root", fp.subnet]).splitlines()]
    found += [f"mount {line.split()[4]}" for line in open("/proc/self/mountinfo")
              if fp.prefix in line or fp.dir in line]
    found += [f"file {p}" for p in (fp.dir, fp.lock_path) if os.path.exists(p)]
    return found


def _processes(fp):
    ours = _self_and_ancestors()
    marker = fp.dir.encode()
    for p in all_processes():
        if p["pid"] in ours:
            continue
        if p["pidns"] in fp.pidns or _mentions(p["pid"], marker):
            yield p


def _mentions(pid, marker):
    for name in ("cmdline", "environ"):
        try:
            if marker in open(f"/proc/{pid}/{name}", "rb").read():
                return True
        except OSError:
            pass
    return False


def _self_and_ancestors():
    """This process and its parents: their environment may mention the harness (SLURM_CONF) harmlessly."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    return pids
