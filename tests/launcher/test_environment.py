"""What a node inherits (the plan's policy, shown in the dry-run) and which GPUs a local run may use."""

import json

import pytest

from launcher.environment import dropped_vars, dropped_warning, node_process_env
from launcher.cli import main
from launcher.errors import KitError
from launcher.backends.local.placement import visible_gpu_ids
from launcher.planning.model import InheritPolicy, from_dict
from launcher.render.dryrun import render_json, render_text
from launcher.spec import load_cluster
from tests.launcher.planning import LOCAL_CPU, LOCAL_GPU, SSH_GPU, cluster, job, plan
from tests.train.launch import link_reference_module

STRAY = {"ACCELERATE_NUM_PROCESSES": "1", "PET_NNODES": "3", "TORCHELASTIC_RUN_ID": "x", "DS_ACCELERATOR": "cuda",
         "MASTER_ADDR": "10.1.1.1", "MASTER_PORT": "1", "WORLD_SIZE": "7", "RANK": "5", "LOCAL_RANK": "2",
         "GROUP_RANK": "1", "LOCAL_WORLD_SIZE": "4", "FSDP_OFFLOAD_PARAMS": "true", "KIT_RUN_ID": "other-run",
         "KIT_EXPECTED_WORLD_SIZE": "9", "OMPI_COMM_WORLD_SIZE": "8", "PMI_RANK": "3"}
KEPT = {"PATH": "/usr/bin", "HOME": "/home/u", "NCCL_DEBUG": "INFO", "OMP_PROC_BIND": "close",
        "KIT_TRAIN_CACHE": "/c", "CUDA_VISIBLE_DEVICES": "0", "PYTHONPATH": "src", "RANKING_MODE": "x"}


def cpu_plan(**fields):
    return plan(job(nodes=2, **fields), cluster(LOCAL_CPU))


def test_stray_launcher_variables_are_dropped_user_ones_kept():
    p = cpu_plan()
    env = node_process_env(p, p.nodes[1], {**STRAY, **KEPT})
    assert {k: env[k] for k in KEPT} == KEPT
    planned = p.nodes[1].env
    for name in STRAY:
        # Gone, unless the plan itself sets the name (then the plan's value, never the submitter's).
        assert env.get(name) == planned.get(name), name
    assert env["KIT_RUN_ID"] == "test-run" and env["ACCELERATE_USE_CPU"] == "1"
    assert dropped_vars(p, {**STRAY, **KEPT}) == sorted(STRAY)


def test_plan_env_wins_and_secrets_are_delivered():
    p = cpu_plan(env={"HF_TOKEN": "t0k", "DB_URL": "pg://u:pw@h", "PLAIN": "p"},
                 secret_env=["DB_URL", "UPSTREAM", "DS_SECRET_CONF"])
    environ = {"PLAIN": "mine", "UPSTREAM": "from-shell", "DS_SECRET_CONF": "ds-from-shell", "DB_URL": "shell"}
    env = node_process_env(p, p.nodes[0], environ)
    assert env["PLAIN"] == "p" and env["HF_TOKEN"] == "t0k" and env["DB_URL"] == "pg://u:pw@h"
    assert env["UPSTREAM"] == "from-shell"
    # A declared pass-through arrives even where the policy would drop that name from the shell.
    assert env["DS_SECRET_CONF"] == "ds-from-shell"
    # ... and the command text carries none of them.
    assert not any(v in p.nodes[0].command for v in ("t0k", "pg://u:pw@h"))


def test_missing_passthrough_secret_is_one_line_error():
    p = cpu_plan(secret_env=["UPSTREAM"])
    with pytest.raises(KitError, match=r"^secret_env: UPSTREAM not set in your environment; export it first$"):
        node_process_env(p, p.nodes[0], {"PATH": "/bin"})


def test_warning_names_dropped_variables_never_values():
    p = cpu_plan()
    line = dropped_warning(p, {**STRAY, "PATH": "/bin"})
    assert "\n" not in line and line.startswith("kit: warning:")
    assert all(name in line for name in STRAY) and "10.1.1.1" not in line and "PATH" not in line
    assert dropped_warning(p, {"PATH": "/bin"}) == ""
    # A remote node does not start from the submitter's shell: nothing to warn about here.
    ssh = plan(job(nodes=2), cluster(SSH_GPU))
    assert dropped_warning(ssh, STRAY) == ""


def test_policy_is_plan_data_shown_in_both_dry_runs():
    p = cpu_plan()
    assert p.inherit.drops("PET_NNODES") and p.inherit.drops("WORLD_SIZE") and not p.inherit.drops("WORLD_SIZES")
    text = render_text(p)
    line = next(ln for ln in text.splitlines() if ln.startswith("inherits:"))
    assert "ACCELERATE_*" in line and "PET_*" in line and "WORLD_SIZE" in line and "MASTER_PORT" in line
    data = json.loads(render_json(p))
    assert "PET_" in data["inherit"]["drop_prefixes"] and "RANK" in data["inherit"]["drop_names"]
    assert from_dict(data) == p


def test_old_records_without_policy_read_back_as_drop_nothing():
    data = cpu_plan().to_dict()
    del data["inherit"]
    assert from_dict(data).inherit == InheritPolicy()


@pytest.mark.parametrize("raw, driver, expected", [
    (None, 8, tuple("01234567")),
    ("4,5,6,7", 8, ("4", "5", "6", "7")),
    (" 6, 7 ", 8, ("6", "7")),
    ("", 8, ()),
    ("-1", 8, ()),
    ("2,9,3", 8, ("2",)),          # CUDA stops at the first invalid index
    ("GPU-8a1b,GPU-77cd", 2, ("GPU-8a1b", "GPU-77cd")),
    ("0,1", 0, ()),                # no driver: no GPUs, whatever the variable says
])
def test_visible_gpu_ids(raw, driver, expected):
    environ = {} if raw is None else {"CUDA_VISIBLE_DEVICES": raw}
    assert visible_gpu_ids(environ, driver) == expected


def fake_driver(tmp_path, monkeypatch, gpus: int, visible=None):
    root = tmp_path / "nvidia"
    for i in range(gpus):
        (root / f"0000:{i:02x}:00.0").mkdir(parents=True)
    monkeypatch.setattr("launcher.backends.local.placement.NVIDIA_GPUS", str(root))
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)


def test_embedded_cluster_counts_visible_gpus_and_slices_them(tmp_path, monkeypatch):
    fake_driver(tmp_path, monkeypatch, 8, "4,5,6,7")
    spec = load_cluster(None)
    assert spec.gpus_per_node == 4 and spec.gpu_ids == ["4", "5", "6", "7"]
    p = plan(job(nodes=2, gpus_per_node=2), spec)
    assert [n.argv[n.argv.index("--gpu_ids") + 1] for n in p.nodes] == ["4,5", "6,7"]
    with pytest.raises(KitError, match="need 6 GPUs but this machine has 4"):
        plan(job(nodes=3, gpus_per_node=2), spec)


def test_cli_dry_run_shows_the_visible_slices(tmp_path, monkeypatch, capsys):
    fake_driver(tmp_path, monkeypatch, 8, "4,5,6,7")
    job_file = tmp_path / "job.yaml"
    job_file.write_text("name: g\nentrypoint: {module: train}\n")
    link_reference_module(tmp_path)   # the nodes' workdir (.) holds the job's module: its check passes
    monkeypatch.chdir(tmp_path)
    assert main(["submit", str(job_file), "--nodes", "2", "--gpus", "2", "--dry-run", "--run-id", "g1"]) == 0
    out = capsys.readouterr().out
    assert "world: 2 node(s) x 2 process(es) = 4, device cuda" in out
    # Node 0's slice in full, node 1's as the rule's value (kit submit --dry-run --node 1 prints it in full).
    assert out.count("--gpu_ids 4,5 ") == 1 and "--gpu_ids <gpus> " in out
    assert "<gpus> of node i: node 0: 4,5; node 1: 6,7\n" in out
    assert "--gpu_ids 0,1" not in out


def test_cluster_file_on_this_machine_honours_the_variable(tmp_path, monkeypatch):
    fake_driver(tmp_path, monkeypatch, 8, "GPU-aa,GPU-bb")
    path = tmp_path / "local.yaml"
    path.write_text("name: w\nbackend: local\ngpus_per_node: 8\n")
    spec = load_cluster(str(path))
    assert spec.gpu_ids == ["GPU-aa", "GPU-bb"]
    p = plan(job(nodes=2, gpus_per_node=1), spec)
    assert [n.argv[n.argv.index("--gpu_ids") + 1] for n in p.nodes] == ["GPU-aa", "GPU-bb"]
    with pytest.raises(KitError, match=r"need 4 GPUs but only 2 are visible \(GPU-aa,GPU-bb\)"):
        plan(job(nodes=2, gpus_per_node=2), spec)


def test_without_the_variable_nothing_changes(tmp_path, monkeypatch):
    fake_driver(tmp_path, monkeypatch, 8)
    assert load_cluster(None).gpu_ids is None
    p = plan(job(nodes=2, gpus_per_node=2), cluster(LOCAL_GPU))
    assert [n.argv[n.argv.index("--gpu_ids") + 1] for n in p.nodes] == ["0,1", "2,3"]


def test_gpu_ids_belong_to_local_clusters_only():
    with pytest.raises(Exception, match="only a local cluster picks GPU ids"):
        cluster(SSH_GPU, gpu_ids=["0"])
    with pytest.raises(Exception, match="only once"):
        cluster(LOCAL_GPU, gpu_ids=["1", "1"])
