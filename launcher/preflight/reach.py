"""Can this node reach the master? Checked from the node itself, as its launcher would dial it: the master's name
as it resolves there, the route (and interface) to it, a TCP connect to the master port. Used when a world does
not form in time (supervise/world.py) and by `kit doctor`. A Python program for the node's own interpreter, and a
pure reader of its one line of output."""

from typing import Optional

from launcher.planning.model import LaunchPlan, NodePlan
from launcher.render.shell import join_argv

MARK = "kit-reach:"
CONNECT_SECONDS = 5.0

# argv: master address, port, seconds for the connect. One line: MARK ok|fail <name> <ip> <dev> [<why>] (the name
# as the node's shell expanded it: on SLURM the allocation's first host).
REACH_SOURCE = f"""\
import socket, subprocess, sys
addr, port, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
try:
    ip = socket.getaddrinfo(addr, port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
except OSError as e:
    print("{MARK}fail", addr, "-", "-", "the master's name %s does not resolve there (%s)" % (addr, e.strerror or e))
    sys.exit(0)
dev, kind = "-", ""
try:
    r = subprocess.run(["ip", "route", "get", ip], capture_output=True, text=True, timeout=5)
    out = r.stdout.split()
    dev = out[out.index("dev") + 1] if "dev" in out else "-"
    if r.returncode != 0:   # no usable route: which kind of route says so (blackhole, unreachable, prohibit)
        shown = subprocess.run(["ip", "-o", "route", "show", "match", ip], capture_output=True, text=True,
                               timeout=5).stdout.splitlines()
        kind = next((w.split()[0] for w in shown if w.split()[:1] in (["blackhole"], ["unreachable"],
                                                                       ["prohibit"])), "")
except Exception:
    pass
try:
    socket.create_connection((ip, port), timeout=limit).close()
    print("{MARK}ok", addr, ip, dev)
except socket.timeout:
    print("{MARK}fail", addr, ip, dev, "no answer within %g s" % limit)
except OSError as e:
    why = ("a %s route to it" % kind) if kind else (e.strerror or str(e)).lower()
    print("{MARK}fail", addr, ip, "-" if kind else dev, why)
"""


def reach_command(plan: LaunchPlan, node: NodePlan, master: Optional[str] = None) -> str:
    """Shell text that runs the probe as the node runs its launch: the node's command (cd, setup lines,
    environment) with the launch replaced by the probe, under the node's own interpreter. Prints the probe's line.
    `master`: the master's name when it is known outside the task (a SLURM allocation's first host: a check step
    of its own sees only its own node in the allocation variables)."""
    rv = plan.runtime_vars
    launch = "exec " + join_argv(node.argv, rv) + "\n"
    argv = (
        node.argv[0],
        "-c",
        REACH_SOURCE,
        master or plan.world.master_addr,
        str(plan.world.master_port),
        f"{CONNECT_SECONDS:g}",
    )
    return node.command[: -len(launch)] + join_argv(argv, rv) + " </dev/null\n"


def reach_detail(output: str, addr: str, port: int) -> tuple[bool, str]:
    """(reached, one line) for `kit doctor`: the interface the route takes when it connects, else the problem."""
    problem = reach_problem(output, addr, port)
    if problem:
        return False, problem
    words = [ln[ln.index(MARK) + len(MARK) :].split(" ", 4) for ln in output.splitlines() if MARK in ln][-1]
    words += [""] * 5
    via = f" via {words[3]}" if words[3] not in ("-", "") else ""
    return True, f"{addr}:{port} reachable{via} (the interface gloo and NCCL get with interface: auto)"


def reach_problem(output: str, addr: str, port: int) -> Optional[str]:
    """None when the probe connected; else what it said, as `it cannot reach the master IP:PORT (why) via DEV`."""
    lines = [ln[ln.index(MARK) + len(MARK) :].split(" ", 4) for ln in output.splitlines() if MARK in ln]
    if not lines:
        last = ([ln for ln in output.splitlines() if ln.strip()] or ["no output"])[-1]
        return f"could not check its route to the master {addr}:{port} ({last.strip()[:200]})"
    words = lines[-1] + [""] * 5
    verdict, name, ip, dev, why = words[:5]
    if verdict == "ok":
        return None
    if ip == "-":
        return f"it cannot reach the master: {why}"
    shown = ip if ip == name else f"{name} = {ip} there"
    via = f" via {dev}" if dev not in ("-", "") else ""
    return f"it cannot reach the master {shown}:{port} ({why}){via}"
