"""The dry-run text at any size: node 0 in full, the others as a rule read back from the printed text and checked
against each node printed in full (--node K), and every node the rule does not describe printed in full."""

import dataclasses
import re

from launcher.render.dryrun import render_json, render_text
from launcher.render.noderule import hostlist
from tests.launcher.planning import LOCAL_GPU, cluster, job, plan


def ssh_cluster(names, addresses=None):
    hosts = [{"name": n, **({"address": a} if a else {})} for n, a in zip(names, addresses or [None] * len(names))]
    return cluster({"name": "boxes", "backend": "ssh", "workdir": "/srv/kit", "gpus_per_node": 8, "hosts": hosts,
                    "ssh": {"user": "train"}})


def _expand(words: str) -> list[str]:
    """The printed host list back to names (gpu[001-003] -> gpu001, gpu002, gpu003)."""
    names = []
    for word in words.split(", "):
        m = re.fullmatch(r"(.*)\[(\d+)-(\d+)\]", word)
        if m is None:
            names.append(word)
            continue
        width = len(m.group(2)) if m.group(2).startswith("0") else 0
        names += [f"{m.group(1)}{n:0{width}d}" for n in range(int(m.group(2)), int(m.group(3)) + 1)]
    return names


def printed_rule(text: str):
    """(the node ranges the rule names, hosts by node, GPU ids by node, template lines) as the text prints them."""
    lines = text.split("\n")
    start = next(k for k, line in enumerate(lines) if re.match(r"nodes? [\d, -]+: (each )?the same as node 0", line))
    covered = lines[start].split(":")[0].split(" ", 1)[1]
    block, k = [], start + 1
    while lines[k]:
        block.append(lines[k])
        k += 1
    joined = "\n".join(block)
    hosts = re.search(r"<host> of node i is the i-th of \(from node 0\): (.*?)\n  \S", joined + "\n  x", re.S)
    gpus = re.search(r"<gpus> of node i: (.*?)\n  \S", joined + "\n  x", re.S)
    template = block[block.index("  the lines that differ (the others are node 0's, ... marks lines left out):")
                     + 1:]
    template = [t[4:] for t in template if t != "    ..."]
    host_names = _expand(" ".join(hosts.group(1).split())) if hosts else None
    gpu_ids = dict(re.findall(r"node (\d+): ([\d,]+)", gpus.group(1))) if gpus else None
    return covered, host_names, gpu_ids, template


def assert_rule_describes(p, ranks):
    """Node K as --node K prints it is node 0's text but for the printed template lines, filled with K's values."""
    _, hosts, gpus, template = printed_rule(render_text(p))
    full0 = render_text(p, node=0).split("\n\n", 1)[1].split("\n")

    def filled(line, k):
        line = line.replace("<i>", str(k))
        line = line.replace("<host>", hosts[k]) if hosts else line
        return line.replace("<gpus>", gpus[str(k)]) if gpus else line

    for k in ranks:
        fullk = render_text(p, node=k).split("\n\n", 1)[1].split("\n")
        assert len(fullk) == len(full0)
        differ = [(a, b) for a, b in zip(full0, fullk) if a != b]
        assert differ, "node K prints as node 0 does: the rule names nothing"
        used = [t for t in template if filled(t, 0) != filled(t, k)]
        assert [b for _, b in differ] == [filled(t, k) for t in used]
        assert [a for a, _ in differ] == [filled(t, 0) for t in used]


def test_512_ssh_nodes_print_as_node_0_and_a_rule_that_reproduces_each_node():
    names = [f"gpu{i:03d}" for i in range(512)]
    p = plan(job(), ssh_cluster(names, [f"10.1.{i // 200}.{i % 200 + 1}" for i in range(512)]), nodes=512)
    text = render_text(p)
    assert text.count("\n") <= 150 and text.count("\nnode 0  host gpu000") == 1 and "\nnode 7  " not in text
    covered, hosts, _, _ = printed_rule(text)
    assert covered == "1-511" and hosts == names
    assert_rule_describes(p, [1, 2, 99, 100, 255, 511])
    # What runs is what the plan says: the JSON keeps every node, in full.
    assert render_json(p).count('"machine_rank"') == 512


def test_hosts_without_a_pattern_and_named_by_their_address_are_listed_in_node_order():
    # Node 0's host is also the master address every node's command names: only where nodes differ is it a hole.
    names = ["10.0.0.11", "head-b", "gpu9", "gpu10", "gpu11", "x.example.org", "10.0.0.7", "gpu12"]
    p = plan(job(), ssh_cluster(names), nodes=8)
    text = render_text(p)
    assert printed_rule(text)[:2] == ("1-7", names)
    assert "getent ahostsv4 10.0.0.11 " in text and "beyond that rule" not in text
    assert_rule_describes(p, range(1, 8))


def test_local_gpu_slices_are_a_value_of_the_rule():
    p = plan(job(), cluster(LOCAL_GPU, gpu_ids=["3", "1", "0", "2", "7", "6"]), nodes=3, gpus=2)
    _, _, gpus, template = printed_rule(render_text(p))
    assert gpus == {"0": "3,1", "1": "0,2", "2": "7,6"} and "gpu_ids: <gpus>" in template
    assert_rule_describes(p, [1, 2])


def _irregular_plan():
    """An 8-node SSH plan whose node 5 runs with one more variable and whose node 3 has its own file changed."""
    p = plan(job(), ssh_cluster([f"gpu{i}" for i in range(8)]), nodes=8)
    n5 = p.nodes[5]
    nodes = list(p.nodes)
    nodes[5] = dataclasses.replace(n5, env={**n5.env, "NCCL_IB_HCA": "mlx5_1"},
                                   command=n5.command.replace("exec ", "export NCCL_IB_HCA=mlx5_1\nexec "))
    path3 = p.nodes[3].files[0]
    files = {**p.files, path3: p.files[path3].replace("use_cpu: false", "use_cpu: true")}
    return dataclasses.replace(p, nodes=tuple(nodes), files=files), path3


def test_a_node_that_differs_beyond_the_rule_is_printed_in_full():
    p, path3 = _irregular_plan()
    text = render_text(p)
    assert "nodes 1-2, 4, 6-7: each the same as node 0" in text
    assert "nodes 3, 5: differ from node 0 beyond that rule; in full below" in text
    for k in (3, 5):   # each in full, as --node K prints it, own file included
        section = render_text(p, node=k).split("\n\n")[1]
        assert "\n\n" + section + "\n\n" in text
    assert "    NCCL_IB_HCA=mlx5_1\n" in text and "    export NCCL_IB_HCA=mlx5_1\n" in text
    assert f"--- file {path3}\n" in text and "use_cpu: true" in text
    assert "--- file runs/test-run/accelerate.node4.yaml" not in text
    assert_rule_describes(p, [1, 2, 4, 6, 7])


def test_an_irregular_node_1_does_not_hide_the_rule_of_the_others():
    p = plan(job(), ssh_cluster([f"gpu{i}" for i in range(6)]), nodes=6)
    nodes = list(p.nodes)
    nodes[1] = dataclasses.replace(nodes[1], workdir="/elsewhere")
    p = dataclasses.replace(p, nodes=tuple(nodes))
    text = render_text(p)
    assert "nodes 2-5: each the same as node 0" in text and "node 1: differs from node 0 beyond that rule" in text
    assert "node 1  host gpu1  machine_rank 1  workdir /elsewhere" in text


def test_a_file_some_nodes_share_is_printed_while_one_printed_node_needs_it():
    p = plan(job(), ssh_cluster([f"gpu{i}" for i in range(4)]), nodes=4)
    extra = "runs/test-run/extra.txt"
    nodes = tuple(dataclasses.replace(n, files=n.files + (extra,)) if n.machine_rank < 2 else n for n in p.nodes)
    p = dataclasses.replace(p, nodes=nodes, files={**p.files, extra: "only nodes 0 and 1\n"})
    text = render_text(p)
    assert "node 1: the same as node 0" in text and "nodes 2-3: differ from node 0 beyond that rule" in text
    assert f"--- file {extra}\nonly nodes 0 and 1\n" in text


def test_a_plan_whose_text_spells_a_hole_prints_every_node_in_full():
    p = plan(job(args=["--tag", "<i>"]), ssh_cluster(["a", "b", "c"]), nodes=3)
    text = render_text(p)
    assert "the same as node 0" not in text
    assert all(f"\nnode {k}  host " in text for k in range(3))


def test_one_node_has_no_rule():
    p = plan(job(), ssh_cluster(["a", "b"]), nodes=1)
    assert "the same as node 0" not in render_text(p) and "beyond" not in render_text(p)


def test_hostlist_folds_only_consecutive_names_of_one_spelling():
    assert hostlist(["a", "gpu01", "gpu02", "gpu03", "n9", "n10", "n11", "n011", "x007", "x008", "x010", "b"]) == [
        "a", "gpu[01-03]", "n[9-11]", "n011", "x[007-008]", "x010", "b"]
