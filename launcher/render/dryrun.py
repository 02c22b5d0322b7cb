"""Print a plan for people (text) or programs (JSON); secrets masked in both."""

from launcher.backends import registry
from launcher.planning.model import LaunchPlan
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
    return (f"world: {w.num_machines} node(s) x {w.procs_per_node} process(es) = {w.world_size}, "
            f"device {w.device}, strategy {w.strategy}, mixed precision {w.mixed_precision}, "
            f"master {w.master_addr}:{w.master_port}")


def _node_text(plan: LaunchPlan, node, secret_env: dict[str, str]) -> str:
    out = [f"node {node.machine_rank}  host {node.host}  machine_rank {node.machine_rank}  "
           f"workdir {node.workdir}  log {node.log}"]
    if node.env:
        out.append("  env added:")
        out += [f"    {k}={v}" for k, v in sorted(secret_env.items())]
    passthrough = [n for n in node.secret_env if n not in node.env]
    if passthrough:
        out.append("  secret env passed from your environment: "
                   + ", ".join(f"{n}={MASK}" for n in passthrough))
    out += registry.placement(plan.backend).dryrun_node(plan, node)
    out.append("  command (bash -c):")
    out.append(_indent(node.command).rstrip("\n"))
    return "\n".join(out)


def _inherit_line(plan: LaunchPlan) -> str:
    policy = plan.inherit
    dropped = [p + "*" for p in policy.drop_prefixes] + list(policy.drop_names)
    if not dropped:
        return "inherits: the environment the node is started in"
    return ("inherits: the environment the node is started in, except " + ", ".join(dropped)
            + " (a job that needs one sets it in env)")


def _network_text(plan: LaunchPlan) -> str:
    """How each node's gloo/NCCL interface is chosen, read off its command (the cluster's `interface`)."""
    command = plan.nodes[0].command
    if "kit_ifname=" in command:
        return ("gloo and NCCL use the interface the route to the master takes, chosen on each node at start "
                "(GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME from env win; cluster interface: NAME or none to change)")
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
        restarts += (f" (after a lost node, a rank killed by a signal, a world not formed or a hang; attempt k on "
                     f"master port {plan.world.master_port - plan.attempt + 1}+k-1")
        restarts += (f", a lost host replaced by a spare: {', '.join(h for h, _ in plan.spare_hosts)})"
                     if plan.spare_hosts else ")")
    return (f"limits: the world forms within {lim.rendezvous_timeout:g} s or the run stops naming the node that "
            f"cannot reach the master; {hang}; {restarts}")


def _attempt_line(plan: LaunchPlan) -> str:
    """What makes this plan a restart's (attempt k > 1)."""
    k = plan.attempt
    if plan.runtime_vars:
        return (f"attempt: {k}, a requeue of the same job: the same script, its ranks and master resolved again in "
                f"the new allocation")
    return (f"attempt: {k}, a restart: master port {plan.world.master_port} (the planned one + {k - 1}), "
            f"rendezvous id {plan.nodes[0].env.get('PET_RDZV_ID', '?')}, on hosts "
            f"{', '.join(dict.fromkeys(n.host for n in plan.nodes))}")


def pipeline_line(plan: LaunchPlan) -> str:
    """The stage layout of a pipelined run: rank r is stage r % N of replica r // N."""
    w = plan.world
    stages, replicas = w.pipeline_stages, w.world_size // w.pipeline_stages
    ranks = "; ".join(f"stage {s}: rank{'s' * (replicas > 1)} "
                      f"{', '.join(str(r * stages + s) for r in range(replicas))}" for s in range(stages))
    return (f"pipeline: {stages} stages x {replicas} replica(s), {w.pipeline_microbatches} micro-batches per step; "
            f"{ranks} (stage 0 holds the embeddings, the last the classifier; each rank reports its layers)")


def render_text(plan: LaunchPlan) -> str:
    head = [
        f"kit plan: run {plan.run_id}  job {plan.job_name}  cluster {plan.cluster_name} ({plan.backend})",
        _world_line(plan),
        *([pipeline_line(plan)] if plan.world.pipeline_stages > 1 else []),
        f"run dir: {plan.run_dir}",
        "submission: " + (" ".join(plan.submission.argv) if plan.submission.argv
                          else "one process per node, started by kit under a watchdog"),
        _inherit_line(plan),
    ]
    if plan.submission.kind == "processes":
        head.append(f"teardown: SIGTERM to every process of every node, SIGKILL after {plan.teardown_grace:g} s")
    head.append(_limits_line(plan))
    if plan.attempt > 1:
        head.append(_attempt_line(plan))
    head.append("network: " + _network_text(plan))
    head += registry.placement(plan.backend).dryrun_head(plan)
    if plan.runtime_vars:
        head.append("resolved inside each task: " + ", ".join("$" + v for v in plan.runtime_vars))
    parts = ["\n".join(head)]
    for node in plan.nodes:
        parts.append(_node_text(plan, node, mask_env(node.env, node.secret_env)))
    for path, content in plan.files.items():
        parts.append(f"--- file {path}\n{content.rstrip(chr(10))}")
    return "\n\n".join(parts) + "\n"
