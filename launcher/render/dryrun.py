"""Print a plan for people (text) or programs (JSON); secrets masked in both."""

import hashlib
from typing import Optional

from launcher.backends import registry
from launcher.planning.model import LaunchPlan
from launcher.render import noderule
from launcher.render.text import to_json
from launcher.secrets import MASK, mask_env


def masked_dict(plan: LaunchPlan) -> dict:
    data = plan.to_dict()
    for node in data["nodes"]:
        node["env"] = mask_env(node["env"], tuple(node["secret_env"]))
    return data


def render_json(plan: LaunchPlan, built_job=None) -> str:
    """The plan as JSON; with `built_job` (a job built from the command line), that job too, under "job"."""
    data = masked_dict(plan)
    if built_job is not None:
        data = {**data, "job": built_job.model_dump(mode="json", exclude_unset=True)}
    return to_json(data)


def _indent(text: str, pad: str = "    ") -> str:
    return "".join(pad + line + "\n" for line in text.rstrip("\n").split("\n"))


def _world_line(plan: LaunchPlan) -> str:
    w = plan.world
    return (
        f"world: {w.num_machines} node(s) x {w.procs_per_node} process(es) = {w.world_size}, "
        f"device {w.device}, strategy {w.strategy}, mixed precision {w.mixed_precision}, "
        f"master {w.master_addr}:{w.master_port}"
    )


def _node_text(plan: LaunchPlan, node, secret_env: dict[str, str]) -> str:
    out = [
        f"node {node.machine_rank}  host {node.host}  machine_rank {node.machine_rank}  "
        f"workdir {node.workdir}  log {node.log}"
    ]
    if node.env:
        out.append("  env added:")
        out += [f"    {k}={v}" for k, v in sorted(secret_env.items())]
    passthrough = [n for n in node.secret_env if n not in node.env]
    if passthrough:
        out.append("  secret env passed from your environment: " + ", ".join(f"{n}={MASK}" for n in passthrough))
    out += registry.placement(plan.backend).dryrun(plan, node)
    out.append("  command (bash -c):")
    out.append(_indent(node.command).rstrip("\n"))
    return "\n".join(out)


def _inherit_line(plan: LaunchPlan) -> str:
    policy = plan.inherit
    dropped = [p + "*" for p in policy.drop_prefixes] + list(policy.drop_names)
    if not dropped:
        return "inherits: the environment the node is started in"
    return (
        "inherits: the environment the node is started in, except "
        + ", ".join(dropped)
        + " (a job that needs one sets it in env)"
    )


def _network_text(plan: LaunchPlan) -> str:
    """How each node's gloo/NCCL interface is chosen, read off its command (the cluster's `interface`)."""
    command = plan.nodes[0].command
    if "kit_ifname=" in command:
        return (
            "gloo and NCCL use the interface the route to the master takes, chosen on each node at start "
            "(GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME from env win; cluster interface: NAME or none to change)"
        )
    if "GLOO_SOCKET_IFNAME" in command:
        return "gloo and NCCL use the interface the cluster names (interface:), unless env sets one"
    return "gloo and NCCL choose their interface themselves (cluster interface: none)"


def _limits_line(plan: LaunchPlan) -> str:
    lim = plan.limits
    hang = f"no rank output for {lim.hang_timeout:g} s is a hang" if lim.hang_timeout else "hang watch off"
    restarts = f"restarts {lim.restarts}"
    if lim.restarts and plan.runtime_vars:
        restarts += " (after a failure that is not the job's own verdict: a requeue, within slurm.max_requeues)"
    if lim.restarts and not plan.runtime_vars:
        restarts += (
            f" (after a lost node, a rank killed by a signal, a world not formed or a hang; attempt k on "
            f"master port {plan.world.master_port - plan.attempt + 1}+k-1"
        )
        restarts += (
            f", a lost host replaced by a spare: {', '.join(h for h, _ in plan.spare_hosts)})"
            if plan.spare_hosts
            else ")"
        )
    return (
        f"limits: the world forms within {lim.rendezvous_timeout:g} s or the run stops naming the node that "
        f"cannot reach the master; {hang}; {restarts}"
    )


def _env_line(plan: LaunchPlan) -> list:
    """How the nodes' environments are compared before training (the job's env_check), where they can differ."""
    where = registry.placement(plan.backend).env_check_where
    if not where or len(plan.nodes) < 2:
        return []
    if plan.env_check == "off":
        return ["env check: off (the nodes' environments are not compared)"]
    task = where == "task"
    how = (
        "by each task before its launcher (env_check.py: node 0 gathers and writes the verdict)"
        if task
        else "in the checks on each host before anything starts"
    )
    if plan.env_check == "strict":
        verdict = "nodes that differ" + (", or a node that reports none," if task else "") + " stop the run (exit 2)"
    else:
        verdict = "a difference" + (" or a node that reports none" if task else "") + " is said"
    return [
        f"env check: {plan.env_check}: every node's Python, torch, accelerate, transformers, deepspeed and kit "
        f"versions, CUDA and NCCL where present, and a hash of the job's code, compared {how}; {verdict}"
    ]


def _attempt_line(plan: LaunchPlan) -> str:
    """What makes this plan a restart's (attempt k > 1)."""
    k = plan.attempt
    if plan.runtime_vars:
        return (
            f"attempt: {k}, a requeue of the same job: the same script, its ranks and master resolved again in "
            f"the new allocation"
        )
    return (
        f"attempt: {k}, a restart: master port {plan.world.master_port} (the planned one + {k - 1}), "
        f"rendezvous id {plan.nodes[0].env.get('PET_RDZV_ID', '?')}, on hosts "
        f"{', '.join(dict.fromkeys(n.host for n in plan.nodes))}"
    )


def pipeline_line(plan: LaunchPlan) -> str:
    """The stage layout of a pipelined run: rank r is stage r % N of replica r // N."""
    w = plan.world
    stages, replicas = w.pipeline_stages, w.world_size // w.pipeline_stages
    ranks = "; ".join(
        f"stage {s}: rank{'s' * (replicas > 1)} {', '.join(str(r * stages + s) for r in range(replicas))}"
        for s in range(stages)
    )
    return (
        f"pipeline: {stages} stages x {replicas} replica(s), {w.pipeline_microbatches} micro-batches per step; "
        f"{ranks} (stage 0 holds the embeddings, the last the classifier; each rank reports its layers)"
    )


def _head_text(plan: LaunchPlan) -> str:
    head = [
        f"kit plan: run {plan.run_id}  job {plan.job_name}  cluster {plan.cluster_name} ({plan.backend})",
        _world_line(plan),
        *([pipeline_line(plan)] if plan.world.pipeline_stages > 1 else []),
        f"run dir: {plan.run_dir}",
        "submission: "
        + (
            " ".join(plan.submission.argv)
            if plan.submission.argv
            else "one process per node, started by kit under a watchdog"
        ),
        _inherit_line(plan),
    ]
    if plan.submission.kind == "processes":
        head.append(f"teardown: SIGTERM to every process of every node, SIGKILL after {plan.teardown_grace:g} s")
    head.append(_limits_line(plan))
    head += _env_line(plan)
    head += [f"host health: {note}" for note in plan.notes]
    if plan.attempt > 1:
        head.append(_attempt_line(plan))
    head.append("network: " + _network_text(plan))
    head += registry.placement(plan.backend).dryrun(plan)
    if plan.runtime_vars:
        head.append("resolved inside each task: " + ", ".join("$" + v for v in plan.runtime_vars))
    return "\n".join(head)


def _own_files(plan: LaunchPlan) -> list[tuple[str, ...]]:
    """Each node's own files (an accelerate.node<R>.yaml): those it needs that not every node needs."""
    shared = set.intersection(*(set(n.files) for n in plan.nodes))
    return [tuple(f for f in n.files if f not in shared and f in plan.files) for n in plan.nodes]


def _kit_programs(plan: LaunchPlan) -> dict[str, tuple[str, str]]:
    """kit's own programs a plan may carry (the same text in every plan): path -> (what it is, its text)."""
    from launcher.render import modules
    from launcher.render import envcheck

    return {
        envcheck.file_name(plan.run_dir): ("kit's environment check (launcher/render/envcheck.py)", envcheck.program()),
        modules.file_name(plan.run_dir): ("kit's module check (launcher/render/modules.py)", modules.program()),
    }


def _file_text(plan: LaunchPlan, path: str, programs: Optional[dict] = None) -> str:
    """A file in full; one of kit's own programs, unchanged, by name, size and hash (--node K shows it in full)."""
    content = plan.files[path]
    what, text = (programs or {}).get(path, ("", None))
    if text == content:
        digest = hashlib.sha256(content.encode()).hexdigest()[:16]
        return (
            f"--- file {path}: {what}, {content.count(chr(10))} lines, sha256 {digest}...; "
            f"kit submit --dry-run --node K or --format json shows it"
        )
    return f"--- file {path}\n{content.rstrip(chr(10))}"


def _gpu_slice(node) -> str:
    """The GPUs a node was given on a machine it shares with other nodes (local: --gpu_ids or
    CUDA_VISIBLE_DEVICES), as its command says; empty where the node has its own host."""
    argv = list(node.argv)
    if "--gpu_ids" in argv[:-1]:
        return argv[argv.index("--gpu_ids") + 1]
    return node.env.get("CUDA_VISIBLE_DEVICES", "")


def _block(plan: LaunchPlan, node, own: tuple[str, ...]) -> list[str]:
    """A node's section and its own files, as the text shows them."""
    text = "\n\n".join(
        [_node_text(plan, node, mask_env(node.env, node.secret_env))] + [_file_text(plan, path) for path in own]
    )
    return text.split("\n")


def _wrapped(words: list[str], first: str, pad: str = "    ", width: int = 116, sep: str = ",") -> list[str]:
    lines, line = [], first
    for k, word in enumerate(words):
        piece = word + (sep if k < len(words) - 1 else "")
        if len(line) + 1 + len(piece) > width and line.strip():
            lines.append(line)
            line = pad + piece
        else:
            line = f"{line} {piece}" if line else piece
    return lines + [line]


def _rule_text(plan: LaunchPlan, rule, values: list[dict[str, str]]) -> str:
    """What differs between node 0 and the nodes the rule covers, said once."""
    holes = {p.name for k in rule.varying() for p in rule.lines[k] if isinstance(p, noderule.Hole)}
    said = ["<i> the node's index (its machine_rank)"]
    lines = []
    if "host" in holes:
        said.append("<host> its host")
        lines += _wrapped(
            noderule.hostlist([v["host"] for v in values]), "  <host> of node i is the i-th of (from node 0):"
        )
    if "gpus" in holes:
        said.append("<gpus> its GPU ids")
        lines += _wrapped([f"node {r}: {v['gpus']}" for r, v in enumerate(values)], "  <gpus> of node i:", sep=";")
    nodes = noderule.ranges(rule.regular)
    lines.append("  the lines that differ (the others are node 0's, ... marks lines left out):")
    last = -1
    for k in rule.varying():
        if k != last + 1:
            lines.append("    ...")
        lines.append("    " + noderule.shown(rule.lines[k]))
        last = k
    many = len(rule.regular) > 1
    return "\n".join(
        [
            f"node{'s' * many} {nodes}: {'each ' * many}the same as node 0 (its section and its own "
            f"files) but for " + ", ".join(said) + "; kit submit --dry-run --node K prints node K in "
            "full:"
        ]
        + lines
    )


def render_text(plan: LaunchPlan, node: Optional[int] = None) -> str:
    """The plan for people: node 0 in full, the nodes that differ from it only by their index, host or GPU slice as
    one rule (derived from the plan and checked node by node), any other node in full; with `node`, that node."""
    own = _own_files(plan)
    if node is not None:
        shown, rule_part = [node], []
    else:
        values = [{"i": str(n.machine_rank), "host": n.host, "gpus": _gpu_slice(n)} for n in plan.nodes]
        blocks = [_block(plan, n, own[r]) for r, n in enumerate(plan.nodes)]
        rule = noderule.derive(blocks, values)
        shown = [0, *rule.irregular]
        rule_part = [_rule_text(plan, rule, values)] if rule.regular else []
        if rule.irregular and rule.regular:
            rule_part.append(
                f"node{'s' * (len(rule.irregular) > 1)} {noderule.ranges(rule.irregular)}: "
                f"differ{'s' * (len(rule.irregular) == 1)} from node 0 beyond that rule; "
                f"in full below"
            )
    parts = [_head_text(plan)]
    parts += [
        _node_text(plan, plan.nodes[shown[0]], mask_env(plan.nodes[shown[0]].env, plan.nodes[shown[0]].secret_env))
    ]
    parts += rule_part
    for r in shown[1:]:
        parts.append(_node_text(plan, plan.nodes[r], mask_env(plan.nodes[r].env, plan.nodes[r].secret_env)))
    hidden = {f for r, files in enumerate(own) if r not in shown for f in files} - {f for r in shown for f in own[r]}
    programs = _kit_programs(plan) if node is None else {}
    for path in plan.files:
        if path not in hidden:
            parts.append(_file_text(plan, path, programs))
    return "\n\n".join(parts) + "\n"
