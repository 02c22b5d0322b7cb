"""The node side of the environment check (job `env_check`): one standard-library program that takes a node's
fingerprint (Python, torch, accelerate, transformers, deepspeed and kit versions, CUDA and NCCL where present, a hash
of the code the job runs), compares fingerprints and draws the table of what differs. kit sends it with an SSH
node's checks (backends/ssh/preflight.py) and compares there; on SLURM it is the plan's file `env_check.py`, which
each task runs before its launcher: the tasks meet in the shared run directory and stop on a difference.

The same text runs on the nodes and in kit (insight/drift.py executes it), so the table is drawn one way."""

import shlex

from launcher.render.shell import quote_word

# Each item once, in the table's order; a value of None: not installed there.
SOURCE = r'''
import hashlib, json, os, re, sys, time

KIT_ENV_PACKAGES = (("torch", "torch"), ("accelerate", "accelerate"), ("transformers", "transformers"),
                    ("deepspeed", "deepspeed"), ("kit", "kit-launcher"))
KIT_ENV_NCCL = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
KIT_ENV_MAX_FILES = 5000


def kit_env_norm(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def kit_env_dists():
    """Normalised name -> its metadata directory, the first on sys.path (whom importlib.metadata would answer)."""
    found = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                key = kit_env_norm(name.rsplit(".", 1)[0].split("-", 1)[0])
                found.setdefault(key, os.path.join(entry or ".", name))
    return found


def kit_env_version(path):
    """The Version header of a distribution's METADATA (its own word, whatever the directory is called)."""
    if path is None:
        return None
    for meta in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(path, meta), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():
                        break
        except OSError:
            continue
    return "?"


def kit_env_torch_cuda():
    """torch's CUDA version, read from torch/version.py (importing torch costs seconds): None for a CPU build."""
    for entry in sys.path:
        path = os.path.join(entry or ".", "torch", "version.py")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    m = re.match(r"^cuda\s*(?::[^=]*)?=\s*['\"]?([^'\"\s]+)", line)
                    if m:
                        return None if m.group(1) == "None" else m.group(1)
            return None
    return None


def kit_env_code_files(kind, target):
    """(name, path) of the files the job's code is: the script, or the module's file or its package's tree."""
    if kind == "script":
        return [(os.path.basename(target), target)] if os.path.isfile(target) else []
    top = target.split(".")[0]
    for entry in sys.path:
        base = os.path.join(entry or ".", top)
        if os.path.isdir(base):
            files = []
            for d, dirs, names in os.walk(base):
                dirs[:] = sorted(x for x in dirs if x != "__pycache__")
                files += [(os.path.relpath(os.path.join(d, n), base), os.path.join(d, n))
                          for n in sorted(names) if n.endswith(".py")]
                if len(files) > KIT_ENV_MAX_FILES:
                    break
            if files:
                return files
        elif os.path.isfile(base + ".py"):
            return [(top + ".py", base + ".py")]
    return []


def kit_env_code(kind, target):
    files = kit_env_code_files(kind, target)
    if not files:
        return "missing"
    h = hashlib.sha256()
    for name, path in files:
        h.update(name.encode() + b"\0")
        try:
            with open(path, "rb") as f:
                h.update(f.read())
        except OSError:
            h.update(b"unreadable")
    return h.hexdigest()[:12]


def kit_env_fingerprint(kind, target):
    dists = kit_env_dists()
    fp = {"python": sys.version.split()[0]}
    for item, dist in KIT_ENV_PACKAGES:
        fp[item] = kit_env_version(dists.get(kit_env_norm(dist)))
    fp["cuda"] = kit_env_torch_cuda()
    fp["nccl"] = next((kit_env_version(dists[kit_env_norm(n)]) for n in KIT_ENV_NCCL if kit_env_norm(n) in dists),
                      None)
    if kind:
        fp["code"] = kit_env_code(kind, target)
    return fp


def kit_env_differing(reports):
    """reports: [(label, fingerprint)] -> [(item, [value per report])] for the items that differ."""
    items = []
    for _, fp in reports:
        items += [k for k in fp if k not in items]
    rows = []
    for item in items:
        values = [fp.get(item) for _, fp in reports]
        if len(set(values)) > 1:
            rows.append((item, values))
    return rows


def kit_env_show(value):
    return "-" if value is None else str(value)


def kit_env_table(reports, rows, columns=8):
    """The differing items by node: a column per node up to `columns` nodes, else each value with its nodes."""
    labels = [label for label, _ in reports]
    if len(labels) <= columns:
        grid = [["environment"] + labels] + [[item] + [kit_env_show(v) for v in values] for item, values in rows]
        widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
        return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in grid]
    out = []
    for item, values in rows:
        groups = {}
        for label, v in zip(labels, values):
            groups.setdefault(kit_env_show(v), []).append(label)
        more = lambda ls: f" and {len(ls) - 4} more" if len(ls) > 4 else ""   # noqa: E731
        out.append(item + ": " + "; ".join(f"{v} on {', '.join(ls[:4])}{more(ls)}" for v, ls in groups.items()))
    return out


def kit_env_summary(reports, rows):
    """One line: what differs, each value with its first node."""
    said = []
    for item, values in rows:
        firsts = {}
        for (label, _), v in zip(reports, values):
            firsts.setdefault(kit_env_show(v), label)
        said.append(f"{item} " + ", ".join(f"{v} on {label}" for v, label in firsts.items()))
    return "; ".join(said)


KIT_ENV_GRACE = 60   # at most this many seconds (or WAIT) the others wait for node 0's verdict beyond WAIT
KIT_ENV_POLL = (0.05, 2.0, 2.0)   # first pause, its growth, the longest pause between looks


def kit_env_nodes(numbers):
    """`node 3, node 7 and 2 more`: the nodes named (at most 8)."""
    said = ", ".join(f"node {i}" for i in numbers[:8])
    return said + (f" and {len(numbers) - 8} more" if len(numbers) > 8 else "")


def kit_env_poll(look, deadline):
    """look() until it answers (not None) or the deadline passes (then None): one look, then pauses that grow from
    50 ms to 2 s, so a node's looks grow with how long it waits, not with how many nodes there are."""
    pause, grow, longest = KIT_ENV_POLL
    while True:
        got = look()
        left = deadline - time.time()
        if got is not None or left <= 0:
            return got
        time.sleep(min(pause, left))
        pause = min(pause * grow, longest)


def kit_env_write(path, data):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def kit_env_gather(here, tag, nodes, deadline):
    """Node 0: {node: file name} of the nodes that reported, all or as many as there are by the deadline. One
    listing of the run directory a look: each file's name carries its node and its fingerprint's hash."""
    pattern = re.compile(r"env\." + re.escape(tag) + r"\.node(\d+)\.([0-9a-f]{16})\.json")
    seen = {}

    def look():
        for entry in os.listdir(here):
            m = pattern.fullmatch(entry)
            if m and int(m.group(1)) < nodes:
                seen[int(m.group(1))] = entry
        return seen if len(seen) == nodes else None
    kit_env_poll(look, deadline)
    return seen


def kit_env_decide(here, mode, nodes, wait, seen):
    """Node 0's verdict: (exit code, lines every node says, lines node 0 alone says: the table). The files are
    read only when their hashes differ (to draw the table), once."""
    strict = mode == "strict"
    missing = [i for i in range(nodes) if i not in seen]
    said = []
    if missing:
        never = f"kit: env_check: {kit_env_nodes(missing)} sent no environment fingerprint within {wait:g} s"
        if strict:   # strict leaves no node out: the run stops, every task with this line
            return 2, [f"{never}, so the nodes cannot all be compared; nothing was started: see that node's task "
                       f"output (its setup or Python), or set env_check: warn (or off)"], []
        said.append(f"{never}; not compared (env_check: warn, training anyway)")
    if len({name.rsplit(".", 2)[1] for name in seen.values()}) < 2:
        return 0, said, []
    reports = []
    for i in sorted(seen):
        with open(os.path.join(here, seen[i])) as f:
            got = json.load(f)
        reports.append((got["label"], got["env"]))
    rows = kit_env_differing(reports)
    if not rows:
        return 0, said, []
    table = ["kit: the nodes' environments differ" + (":" if strict else " (env_check: warn, training anyway):")]
    table += ["  " + line for line in kit_env_table(reports, rows)]
    fix = ("make every node's environment the same, or set env_check: warn (or off) to train anyway" if strict
           else "env_check: warn")
    said.append(f"kit: environment drift between nodes: {kit_env_summary(reports, rows)}; {fix}")
    return (2 if strict else 0), said, table


def kit_env_main(argv):
    """On each task: `env_check.py MODE NODES NODE WAIT KIND TARGET`. Each node writes its fingerprint into the
    run directory, in a file named by its node and the fingerprint's hash; node 0 alone gathers them (one listing
    a look, at most WAIT s), decides and writes one verdict file, which every other node waits for (one open a
    look). Every node then says the same verdict: exit 2 on a difference, or on a node that never reported, when
    MODE is strict. A node's file operations do not grow with the number of nodes."""
    mode, nodes, node, wait, kind, target = argv[0], int(argv[1]), int(argv[2]), float(argv[3]), argv[4], argv[5]
    started = time.time()
    here = os.path.dirname(os.path.abspath(__file__))
    tag = "-".join(x for x in (os.environ.get("SLURM_JOB_ID"), os.environ.get("SLURM_RESTART_COUNT") or "0") if x)
    host = os.environ.get("SLURMD_NODENAME") or os.uname()[1]
    env = kit_env_fingerprint(kind, target)
    digest = hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()[:16]
    kit_env_write(os.path.join(here, f"env.{tag}.node{node}.{digest}.json"),
                  {"label": f"node {node} ({host})", "env": env})
    verdict_path = os.path.join(here, f"env.{tag}.verdict.json")
    if node == 0:
        code, said, table = kit_env_decide(here, mode, nodes, wait,
                                           kit_env_gather(here, tag, nodes, started + wait))
        for line in table + said:   # said before the others hear it: the job's cause is these words
            print(line, file=sys.stderr, flush=True)
        kit_env_write(verdict_path, {"code": code, "said": said})
        return code

    def look():
        try:
            with open(verdict_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None
    waited = wait + min(wait, KIT_ENV_GRACE)   # the tasks start seconds apart: node 0 may start later
    verdict = kit_env_poll(look, started + waited)
    if verdict is None:
        verdict = {"code": 2 if mode == "strict" else 0, "said": [
            f"kit: env_check: node 0 gave no verdict within {waited:g} s (it gathers every node's "
            f"environment: see its task output); " + ("stopping" if mode == "strict"
                                                      else "not compared (env_check: warn, training anyway)")]}
    for line in verdict["said"]:
        print(line, file=sys.stderr, flush=True)
    return verdict["code"]

'''
# The plan's env_check.py: the functions above, run as a program. Its own directory (the run directory, shared by
# every node) is first on sys.path and holds nothing to import: each import would look there first, and list it
# again whenever another node's file has changed it, so it leaves sys.path before the first import.
PROLOGUE = """import os, sys
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
"""
MAIN = """
if __name__ == "__main__":
    sys.exit(kit_env_main(sys.argv[1:]))
"""

MODES = ("strict", "warn", "off")


def program() -> str:
    """The text of the plan's env_check.py."""
    return PROLOGUE + SOURCE + MAIN


def probe_lines(marker: str, kind: str, target: str) -> str:
    """Python lines (after SOURCE) that print this node's fingerprint after `marker`, for a backend's checks."""
    return (
        f"import json as _kit_json\n"
        f"print({marker!r} + 'env', _kit_json.dumps(kit_env_fingerprint({kind!r}, {target!r})))\n"
    )


def file_name(run_dir: str) -> str:
    return f"{run_dir}/env_check.py"


def task_line(
    python: str,
    run_dir: str,
    mode: str,
    nodes: int,
    node_word: str,
    wait: float,
    kind: str,
    target: str,
    runtime_vars: tuple,
) -> str:
    """The node command's line that runs the check before the launcher (a SLURM task): a difference in strict
    mode ends the task with the program's exit code (2), so the job fails with the table said."""
    head = [python, file_name(run_dir), mode, str(nodes)]
    tail = [f"{wait:g}", kind, target]
    words = [*map(shlex.quote, head), quote_word(node_word, runtime_vars), *map(shlex.quote, tail)]
    return " ".join(words) + " || exit $?"


__all__ = ["SOURCE", "MODES", "program", "probe_lines", "file_name", "task_line"]
