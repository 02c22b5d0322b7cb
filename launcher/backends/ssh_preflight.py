"""Cheap checks on every host before an SSH run starts anything: reachable (the connect), the plan's python found
after the node's setup lines (with psutil, which the watchdog needs), the entrypoint there, the master port free.
Each problem is one line naming the host."""

import shlex
from concurrent.futures import ThreadPoolExecutor

from launcher.plan.model import LaunchPlan, NodePlan
from launcher.preflight.entrypoint import CheckResult, entrypoint_check_command, interpret_entrypoint_check
from launcher.render.shell import join_argv

CHECK_TIMEOUT = 120.0
PROBE = "kit-probe:"
# Runs under the node's interpreter after its setup lines: where it is, and whether the master port is free.
PROBE_SOURCE = f"""\
import errno, socket, sys
import psutil
print("{PROBE}python", sys.executable)
port = int(sys.argv[1])
if port:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("", port))
        print("{PROBE}port free")
    except OSError as e:
        print("{PROBE}port busy" if e.errno in (errno.EADDRINUSE, errno.EACCES) else "{PROBE}port error", e)
"""


def _swap_launch(node: NodePlan, argv: tuple, runtime_vars) -> str:
    """The node's command (cd, setup, env) with its launch line replaced by `argv`."""
    launch = "exec " + join_argv(node.argv, runtime_vars) + "\n"
    return node.command[:-len(launch)] + "exec " + join_argv(argv) + "\n"


SPLIT = "kit-preflight-split"


def _remote_checks(conn, texts: list) -> list:
    """Run several bash texts in one remote command (one login-shell start, ~0.5 s, instead of one each);
    a marker line with the exit status after each, on stdout and stderr: [CheckResult per text]."""
    mark = f'c=$?; printf "\\n{SPLIT} %s\\n" "$c"; printf "\\n{SPLIT} %s\\n" "$c" >&2'
    _, out, err = conn.run("; ".join(f"bash -c {shlex.quote(t)}; {mark}" for t in texts), timeout=CHECK_TIMEOUT)
    outs, errs = out.split(f"\n{SPLIT} "), err.split(f"\n{SPLIT} ")
    results = []
    for i in range(len(texts)):
        code = outs[i + 1].split("\n", 1)[0].strip() if i + 1 < len(outs) else ""
        results.append(CheckResult(int(code) if code.isdigit() else 255, _part(outs, i), _part(errs, i)))
    return results


def _part(parts: list, i: int) -> str:
    """The i-th text's output: after the previous marker's status line."""
    if i >= len(parts):
        return ""
    return parts[0] if i == 0 else (parts[i].split("\n", 1) + [""])[1]


def _probe_text(plan: LaunchPlan, node: NodePlan) -> str:
    port = plan.world.master_port if node.machine_rank == 0 else 0
    return _swap_launch(node, (node.argv[0], "-c", PROBE_SOURCE, str(port)), plan.runtime_vars)


def _read_probe(plan: LaunchPlan, node: NodePlan, result: CheckResult):
    """(interpreter path, None) or (None, problem line)."""
    said = dict(line[len(PROBE):].split(" ", 1) for line in result.stdout.splitlines() if line.startswith(PROBE))
    where = f"host {node.host}"
    if "python" not in said:
        last = ([ln for ln in result.stderr.splitlines() if ln.strip()] or ["no output"])[-1]
        if "No module named 'psutil'" in result.stderr:
            return None, f"{where}: {node.argv[0]} has no psutil (kit's node watchdog needs it): pip install psutil"
        return None, (f"{where}: python {node.argv[0]!r} not usable after the setup lines "
                      f"(exit {result.returncode}): {last}")
    if said.get("port", "free").startswith("busy"):
        return None, (f"{where}: master port {plan.world.master_port} is in use on the master host; "
                      f"pick another with --port")
    return said["python"].strip(), None


def _check_host(conn, plan: LaunchPlan, node: NodePlan, entrypoint):
    texts = [_probe_text(plan, node)]
    if entrypoint is not None:
        texts.append(entrypoint_check_command(node, entrypoint, plan.runtime_vars))
    results = _remote_checks(conn, texts)
    python, problem = _read_probe(plan, node, results[0])
    if problem:
        return None, problem
    if entrypoint is not None:
        problem = interpret_entrypoint_check(entrypoint, node, results[1], f"{node.host}:{node.workdir}")
        if problem:
            return None, f"host {node.host}: {problem}"
    return python, None


def check_hosts(conns: dict, plan: LaunchPlan, entrypoint) -> tuple[dict, list]:
    """Every node at once: ({rank: interpreter path}, [problem lines])."""
    with ThreadPoolExecutor(max_workers=max(1, min(64, len(plan.nodes)))) as pool:
        futures = [pool.submit(_check_host, conns[n.host], plan, n, entrypoint) for n in plan.nodes]
        results = [f.result() for f in futures]
    pythons = {n.machine_rank: r[0] for n, r in zip(plan.nodes, results)}
    return pythons, [r[1] for r in results if r[1]]


def entry_checker(plan: LaunchPlan, host: str, job):
    """For `kit doctor --job`: conn -> problem line or None, the same check `kit submit` runs."""
    node = next(n for n in plan.nodes if n.host == host) if any(n.host == host for n in plan.nodes) else None

    def check(conn):
        if node is None:
            return None
        text = entrypoint_check_command(node, job.entrypoint, plan.runtime_vars)
        code, out, err = conn.run("bash -c " + shlex.quote(text), timeout=CHECK_TIMEOUT)
        return interpret_entrypoint_check(job.entrypoint, node, CheckResult(code, out, err),
                                          f"{host}:{node.workdir}")

    return check
