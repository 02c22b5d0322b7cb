"""`kit doctor` for an SSH cluster: every check on every host, in parallel, as rows (host, check, verdict, detail).
Verdicts: ok, FAIL, skipped. Nothing is started that outlives the check."""

import json
import shlex
from concurrent.futures import ThreadPoolExecutor

from launcher.backends.ssh.preflight import last_line
from launcher.errors import KitError
from launcher.preflight.entrypoint import after_marker
from launcher.preflight.reach import CONNECT_SECONDS, REACH_SOURCE, reach_detail
from launcher.render import modules  # at import: the SSH threads import nothing (test_ssh_thread_imports)
from launcher.render.shell import node_command

PACKAGES = ("torch", "accelerate", "deepspeed", "transformers")
DEFAULT_MODULES = ("accelerate", "torch")  # without --job: what an accelerate launch needs
MARK = "kit-doctor:"
MIN_FREE_GB = 1.0
# Versions come from package metadata: nothing heavy is imported.
FACTS_SOURCE = f"""\
import importlib.metadata as md, json, shutil, subprocess, sys
info = {{"python": sys.executable, "version": sys.version.split()[0], "packages": {{}}}}
for name in {PACKAGES!r}:
    try:
        info["packages"][name] = md.version(name)
    except md.PackageNotFoundError:
        info["packages"][name] = None
try:
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    info["gpus"] = sum(l.startswith("GPU ") for l in out.stdout.splitlines()) if out.returncode == 0 else None
except (OSError, subprocess.TimeoutExpired):
    info["gpus"] = None
info["free_gb"] = round(shutil.disk_usage(".").free / 1e9, 1)
print("{MARK}" + json.dumps(info))
"""
# Listens on the master port until its stdin closes: the other hosts' connections prove the route.
LISTEN_SOURCE = f"""\
import select, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("", int(sys.argv[1])))
except OSError as e:
    print("{MARK}busy", e, flush=True)
    sys.exit(0)
s.listen(64)
print("{MARK}listening", flush=True)
while True:
    ready, _, _ = select.select([s, sys.stdin], [], [], 60)
    if not ready or sys.stdin in ready:
        break
    s.accept()[0].close()
"""


def _text(cluster, argv) -> str:
    env = dict(cluster.env)
    return "bash --norc -c " + shlex.quote(node_command(cluster.workdir, tuple(cluster.setup), env, tuple(argv)))


def _said(out: str) -> list:
    return after_marker(out, MARK)


def _facts(conn, cluster, python, entry=("", ""), needed=DEFAULT_MODULES) -> tuple[dict, str]:
    from launcher.render.envcheck import SOURCE, probe_lines

    # And what a run's checks take: the fingerprint, and the launch's modules found (the same find_spec check).
    program = FACTS_SOURCE + SOURCE + probe_lines(MARK, *entry) + modules.SOURCE + modules.probe_lines(MARK, needed)
    code, out, err = conn.run(_text(cluster, (python, "-c", program)), timeout=120)
    said = _said(out)
    if not said:
        last = last_line(err)
        return {}, f"{python} not usable after the setup lines (exit {code}): {last}"
    facts = json.loads(said[0])
    facts["env"] = next((json.loads(v[4:]) for v in said[1:] if v.startswith("env ")), None)
    facts["missing"] = next((v[len("missing ") :] for v in said[1:] if v.startswith("missing ")), "")
    return facts, ""


def _env_rows(facts: dict) -> list:
    from launcher.insight.drift import doctor_rows as env_rows

    return env_rows([(host, f["env"]) for host, f in facts.items() if f.get("env") is not None])


def _host_rows(
    name, conn, cluster, python, gpus_wanted, entry_check, entry=("", ""), needed=DEFAULT_MODULES
) -> tuple[list, dict]:
    facts, problem = _facts(conn, cluster, python, entry, needed)
    if problem:
        return [(name, "python", "FAIL", problem)], {}
    rows = [
        (name, "python", "ok", f"{facts['python']} ({facts['version']})"),
        (
            name,
            "modules",
            "FAIL" if facts["missing"] else "ok",
            facts["missing"] or f"{', '.join(needed)} found (what the launch imports first)",
        ),
    ]
    if gpus_wanted == 0:
        rows.append((name, "gpus", "skipped", "CPU cluster"))
    else:
        seen = facts["gpus"]
        ok = seen is not None and seen >= gpus_wanted
        rows.append(
            (
                name,
                "gpus",
                "ok" if ok else "FAIL",
                f"nvidia-smi -L: {'not available' if seen is None else seen}, config wants {gpus_wanted}",
            )
        )
    free = facts["free_gb"]
    rows.append((name, "disk", "ok" if free >= MIN_FREE_GB else "FAIL", f"{free} GB free in {cluster.workdir}"))
    if entry_check is not None and cluster.sync is not None:
        # The code arrives with the run (sync copies it before the checks): nothing to find here yet.
        rows.append((name, "entrypoint", "skipped", "sync: copied into the workdir with each run, then checked"))
    elif entry_check is not None:
        problem = entry_check(conn)
        rows.append((name, "entrypoint", "FAIL" if problem else "ok", problem or "importable"))
    return rows, facts


def _sftp_row(name, conn) -> tuple:
    """kit uploads each node's files (its accelerate config) over SFTP: the session must start."""
    from launcher.transport.sftp import SftpUnavailable

    try:
        conn.open_sftp()
    except SftpUnavailable as e:
        return name, "sftp", "FAIL", str(e)
    except Exception as e:  # paramiko and socket errors: a row, not a traceback
        return name, "sftp", "FAIL", f"SFTP did not start: {e or type(e).__name__}"
    return name, "sftp", "ok", "the SFTP session starts (kit uploads each node's files with it)"


def _version_rows(facts: dict) -> list:
    """One row per host: its versions, FAIL where any differs from the others' (or a package is missing)."""
    rows = []
    for pkg in ("python",) + PACKAGES:
        values = {h: (f["version"] if pkg == "python" else f["packages"].get(pkg)) for h, f in facts.items()}
        differ = len(set(values.values())) > 1
        for host, v in values.items():
            bad = differ or (v is None and pkg in ("torch", "accelerate"))
            detail = f"{pkg} {v or 'not installed'}" + (" (differs between hosts)" if differ else "")
            rows.append((host, f"version {pkg}", "FAIL" if bad else "ok", detail))
    return rows


def _network_rows(conns, cluster, pythons, master, port) -> list:
    head = cluster.hosts[0].name
    chan = conns[head].session(_text(cluster, (pythons[head], "-c", LISTEN_SOURCE, str(port))))
    stream, first = chan.makefile("rb"), ""
    while MARK not in first:  # the login and setup lines may print first
        raw = stream.readline()
        if not raw:
            break
        first = raw.decode(errors="replace").strip()
    first = first[first.find(MARK) :] if MARK in first else first
    if not first.endswith("listening"):
        chan.close()
        return [(head, "master port", "FAIL", f"port {port} in use on the master host ({first or 'no answer'})")]
    rows = [(head, "master port", "ok", f"{port} free")]

    def dial(host):
        """The same check a run makes from a node whose world does not form (preflight/reach.py)."""
        _, out, err = conns[host].run(
            _text(cluster, (pythons[host], "-c", REACH_SOURCE, master, str(port), f"{CONNECT_SECONDS:g}")), 60
        )
        ok, detail = reach_detail(out + err, master, port)
        return (host, "tcp to master", "ok" if ok else "FAIL", detail)

    with ThreadPoolExecutor(max_workers=max(1, min(64, len(conns)))) as pool:
        rows += list(pool.map(dial, list(pythons)))
    chan.shutdown_write()  # stdin EOF: the listener exits
    chan.close()
    return rows


def doctor_rows(cluster, job=None, plan=None) -> list:
    from launcher.backends.ssh.preflight import entry_checker
    from launcher.planning.placement import master_port
    from launcher.transport.connect import connect
    from launcher.transport.endpoint import resolve, ssh_settings
    from launcher.transport.hostkeys import Accepted

    settings = ssh_settings(cluster.ssh)
    point = job.entrypoint if job is not None else None
    entry = (("module", point.module) if point.module else ("script", point.script)) if point else ("", "")
    python = cluster.python or "python"
    needed = (
        modules.required(plan.nodes[0].argv, plan.world.strategy)
        if plan is not None and plan.nodes
        else DEFAULT_MODULES
    )
    rows, conns = [], {}

    def one(host):
        try:
            conn = connect(resolve(host.name, host.address, settings), Accepted())
        except KitError as e:
            return host.name, None, [(host.name, "ssh", "FAIL", str(e))], {}
        wanted = host.gpus if host.gpus is not None else cluster.gpus_per_node
        check = entry_checker(plan, host.name, job) if plan is not None else None
        host_rows, facts = _host_rows(host.name, conn, cluster, python, wanted, check, entry, needed)
        return (
            host.name,
            conn,
            [(host.name, "ssh", "ok", "reachable, authenticated, host key known"), _sftp_row(host.name, conn)]
            + host_rows,
            facts,
        )

    with ThreadPoolExecutor(max_workers=max(1, min(64, len(cluster.hosts)))) as pool:
        results = list(pool.map(one, cluster.hosts))
    facts = {name: f for name, _, _, f in results if f}
    for name, conn, host_rows, _ in results:
        rows += host_rows
        if conn is not None:
            conns[name] = conn
    rows += _version_rows(facts) + _env_rows(facts)
    try:
        head = cluster.hosts[0]
        if head.name in facts and set(facts) == set(conns):
            port = plan.world.master_port if plan is not None else master_port(cluster.master_port, "doctor")
            rows += _network_rows(
                conns, cluster, {h: f["python"] for h, f in facts.items()}, head.address or head.name, port
            )
        else:
            rows.append((head.name, "master port", "skipped", "not every host answered"))
    finally:
        for conn in conns.values():
            conn.close()
    return rows
