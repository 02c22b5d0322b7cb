"""Every rank's Python stack, taken on the node where it runs, with the field's tool (py-spy dump: no cooperation
from the program needed). A Python program for the node's own interpreter, and a pure reader of its output."""

import re
from typing import Optional

from launcher.planning.model import LaunchPlan, NodePlan
from launcher.render.shell import join_argv

BEGIN, END = "kit-stack:begin", "kit-stack:end"

# argv: run id, then (a one-process world's) the rank's own argv. For each process of the run that is a rank (RANK in
# its environment, set by its launcher; a one-process node's rank has none: it is the process running that argv):
# BEGIN <rank> <pid>, py-spy's dump of it (or why there is none), END.
DUMP_SOURCE = f"""\
import os, shutil, subprocess, sys
run = ("KIT_RUN_ID=" + sys.argv[1]).encode()
alone = [os.fsencode(w) for w in sys.argv[2:]]
spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = f.read().split(b"\\0")
    except OSError:
        continue
    rank = [v[5:].decode() for v in env if v.startswith(b"RANK=")]
    if alone and not rank:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                rank = ["0"] if f.read().split(b"\\0")[:-1] == alone else []
        except OSError:
            continue
    if run not in env or not rank:
        continue
    print("{BEGIN}", rank[0], pid, flush=True)
    if not os.access(spy, os.X_OK):
        print("no stack: py-spy is not installed next to", sys.executable)
    else:
        try:
            r = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30)
            print(r.stdout if r.returncode == 0 else "no stack: py-spy: " + (r.stderr.strip() or r.stdout)[-300:])
        except subprocess.TimeoutExpired:
            print("no stack: py-spy did not answer within 30 s")
    print("{END}", flush=True)
"""

_FRAME = re.compile(r"^\s+(\S.*?) \((.+)\)$")


def dump_command(plan: LaunchPlan, node: NodePlan) -> str:
    """The node's preamble, then the dump under the node's interpreter."""
    launch = "exec " + join_argv(node.argv, plan.runtime_vars) + "\n"
    alone = node.argv if plan.world.world_size == 1 else ()
    return (
        node.command[: -len(launch)]
        + join_argv((node.argv[0], "-c", DUMP_SOURCE, plan.run_id, *alone))
        + " </dev/null\n"
    )


def parse_dumps(output: str) -> dict:
    """rank -> its dump text, from DUMP_SOURCE's output."""
    stacks: dict[int, str] = {}
    lines: list[str] = []
    rank = None
    for line in output.splitlines():
        if line.startswith(BEGIN):
            rank, lines = int(line.split()[1]), []
        elif line.startswith(END) and rank is not None:
            stacks[rank] = "\n".join(lines).strip() + "\n"
            rank = None
        elif rank is not None:
            lines.append(line)
    return stacks


def innermost(dump: str) -> Optional[str]:
    """The main thread's innermost frame, `function (file:line)` (py-spy lists innermost first), or None. py-spy
    names threads only when it can read their names: an unnamed dump's first thread is the main one."""
    first, named = None, None
    thread, in_main = 0, False
    for line in dump.splitlines():
        if line.startswith("Thread "):
            thread += 1
            in_main = '"MainThread"' in line
            continue
        m = _FRAME.match(line)
        if m and thread:
            frame = f"{m.group(1)} ({m.group(2).rsplit('/', 1)[-1]})"
            if in_main and named is None:
                named = frame
            if thread == 1 and first is None:
                first = frame
    return named or first
