"""Cheap checks on every host before an SSH run starts anything: reachable (the connect), the plan's python found
after the node's setup lines with the launch's modules (render/modules.py), the entrypoint there, the master port
free. Each problem is one line naming the
host."""

import json
import shlex

from launcher.errors import Option
from launcher.planning.model import LaunchPlan, NodePlan
from launcher.preflight.entrypoint import (
    CHECK_SOURCE,
    MARKER,
    CheckResult,
    after_marker,
    entrypoint_check_command,
    entrypoint_target,
    interpret_entrypoint_check,
)
from launcher.render import modules  # at import: the SSH threads import nothing (test_ssh_thread_imports)
from launcher.render.shell import join_argv

CHECK_TIMEOUT = 120.0
PROBE = "kit-probe:"
# Runs under the node's interpreter after its setup lines: where it is, and whether the master port is free.
PROBE_SOURCE = f"""\
import sys
print("{PROBE}python", sys.executable)
port = int(sys.argv[1])
if port:   # the master host only
    import errno, socket
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("", port))
        print("{PROBE}port free")
    except OSError as e:
        print("{PROBE}port busy" if e.errno in (errno.EADDRINUSE, errno.EACCES) else "{PROBE}port error", e)
"""


def last_line(text: str) -> str:
    """A remote command's last non-empty line of output, for one-line errors."""
    return ([ln for ln in text.splitlines() if ln.strip()] or ["no output"])[-1]


def _swap_launch(node: NodePlan, argv: tuple, runtime_vars) -> str:
    """The node's command (cd, setup, env) with its launch line replaced by `argv`, run as a child of the shell
    (not exec'd: the gate shell stays its parent, gate.py)."""
    from launcher.backends.ssh.gate import CHANNEL

    launch = "exec " + join_argv(node.argv, runtime_vars) + "\n"
    return node.command[: -len(launch)] + join_argv(argv) + f" {CHANNEL}\nexit $?\n"


def check_input(plan: LaunchPlan, node: NodePlan, entrypoint, heartbeat: float = 0.0) -> bytes:
    """What the node's launch channel is sent (gate.gate_input): the node's preamble, then one interpreter
    start for everything: the probe, the local backend's entrypoint check (its CHECK_SOURCE, same markers), and
    the boot that waits for kit's word and becomes the watchdog. Each Python start on a host costs CPU that a
    fan-out to many hosts pays many times."""
    from launcher.backends.ssh.boot import boot_source
    from launcher.backends.ssh.gate import LOADER, gate_input

    port = plan.world.master_port if node.machine_rank == 0 else 0
    # The launch's modules found (find_spec, nothing imported): a host without accelerate is named before the start.
    needed = modules.required(node.argv, plan.world.strategy)
    source = PROBE_SOURCE + modules.SOURCE + modules.probe_lines(PROBE, needed)
    args = [str(port)]
    if entrypoint is not None and plan.env_check != "off" and len(plan.nodes) > 1:
        # The node's fingerprint for the environment check (insight/drift.py), taken where the node will run.
        from launcher.render.envcheck import SOURCE, probe_lines

        source += SOURCE + probe_lines(PROBE, *entrypoint_target(entrypoint))
    if entrypoint is not None:
        kind, target = entrypoint_target(entrypoint)
        source, args = source + "sys.argv = sys.argv[1:]\n" + CHECK_SOURCE, args + [kind, target]
    program = (source + boot_source()).encode()
    boot = (f"{plan.teardown_grace:g}", f"{heartbeat:g}", node.command)
    argv = (node.argv[0], "-c", LOADER, str(len(program)), *args, *boot)
    return gate_input(_swap_launch(node, argv, plan.runtime_vars), program)


def _read_probe(plan: LaunchPlan, node: NodePlan, result: CheckResult):
    """None, or a problem line."""
    said = dict(value.split(" ", 1) for value in after_marker(result.stdout, PROBE))
    where = f"host {node.host}"
    if "python" not in said:
        last = last_line(result.stderr)
        return f"{where}: python {node.argv[0]!r} not usable after the setup lines (exit {result.returncode}): {last}"
    if "missing" in said:
        return f"{where}: {said['missing']}"
    if said.get("port", "free").startswith("busy"):
        return (
            f"{where}: master port {plan.world.master_port} is in use on the master host; pick another with ",
            Option("port"),
        )
    return None


def fingerprint_of(result: CheckResult):
    """The node's fingerprint its checks printed (render/envcheck.py), or None."""
    for value in after_marker(result.stdout, PROBE):
        if value.startswith("env "):
            try:
                return json.loads(value[4:])
            except ValueError:
                return None
    return None


def _interpret(plan: LaunchPlan, node: NodePlan, entrypoint, result: CheckResult):
    """None, or a problem line naming the host."""
    problem = _read_probe(plan, node, result)
    if problem is None and entrypoint is not None:
        problem = interpret_entrypoint_check(entrypoint, node, result, f"{node.host}:{node.workdir}")
        problem = problem and f"host {node.host}: {problem}"
    return problem


def timed_out_step(e) -> str:
    """Which step the checks were in when they stopped answering: the node's setup lines (the check's python
    never said where it is), or the checks themselves."""
    started = any(PROBE in ln for ln in e.lines)
    said = [ln for ln in e.lines if PROBE not in ln and MARKER not in ln]
    last = f" (its last output: {said[-1].strip()[:200]})" if said else ""
    if not started:
        return (
            f"the node's setup lines did not finish within {e.timeout:.0f} s{last}; one may be waiting for input "
            f"or a slow service (setup lines get no stdin: read nothing from it)"
        )
    return f"the checks (python, entrypoint, master port) did not finish within {e.timeout:.0f} s{last}"


def gate_host(conn, plan: LaunchPlan, entrypoint, heartbeat: float = 0.0, fingerprints=None) -> tuple[dict, list]:
    """The launch channels of the nodes on this connection's host, checks run and waiting for `go`:
    ({rank: (chan, early bytes)}, [problem lines naming the host]). The SFTP session for the upload (if the
    host's nodes have files) opens while the host runs the checks. On problems the caller closes the channels,
    which starts nothing. `fingerprints`: a dict that gets each node's fingerprint, by rank."""
    from launcher.backends.ssh.gate import GATE_COMMAND, ChecksTimedOut, read_checks
    from launcher.transport.sftp import SftpUnavailable

    host = conn.endpoint.name
    gates, problems, opened = {}, [], []
    try:
        nodes = [n for n in plan.nodes if n.host == host]
        for node in nodes:
            chan = conn.session(GATE_COMMAND)  # opened early (ssh/early.py) or now
            chan.sendall(check_input(plan, node, entrypoint, heartbeat))
            opened.append((node, chan))
        if any(node.files for node in nodes):
            conn.open_sftp()
        for node, chan in opened:
            result, early, waiting = read_checks(chan, CHECK_TIMEOUT, (PROBE, MARKER))
            gates[node.machine_rank] = (chan, early)
            problem = _interpret(plan, node, entrypoint, result)
            if fingerprints is not None and (fp := fingerprint_of(result)) is not None:
                fingerprints[node.machine_rank] = fp
            if problem is None and not waiting:  # the checks passed, then the program died before waiting for kit
                last = last_line(result.stderr)
                problem = f"host {host}: the node's checks passed, then it ended (exit {result.returncode}): {last}"
            if problem:
                problems.append(problem)
    except SftpUnavailable as e:
        problems.append(f"host {host}: cannot upload the run's files: {e}")
    except ChecksTimedOut as e:
        problems.append(f"host {host}: {timed_out_step(e)}")
    except Exception as e:  # a channel refused or a check that never answered: name the host
        problems.append(f"host {host}: preflight failed: {e or type(e).__name__}")
    return gates, problems


def entry_checker(plan: LaunchPlan, host: str, job):
    """For `kit doctor --job`: conn -> problem line or None, the same check `kit submit` runs."""
    node = next(n for n in plan.nodes if n.host == host) if any(n.host == host for n in plan.nodes) else None

    def check(conn):
        if node is None:
            return None
        text = entrypoint_check_command(node, job.entrypoint, plan.runtime_vars)
        code, out, err = conn.run("bash --norc -c " + shlex.quote(text), timeout=CHECK_TIMEOUT)
        return interpret_entrypoint_check(job.entrypoint, node, CheckResult(code, out, err), f"{host}:{node.workdir}")

    return check
