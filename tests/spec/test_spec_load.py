"""Loading job and cluster specs, and applying command-line overrides purely."""

from pathlib import Path

import pytest

from launcher.errors import KitError
from launcher.spec import DEFAULT_CLUSTER, Overrides, apply_overrides, load_cluster, load_job
from launcher.spec.cluster import Host, PortPolicy
from tests.launcher.planning import LOCAL_CPU, SSH_GPU, cluster, job, plan

ROOT = Path(__file__).resolve().parents[2]
JOBS = sorted((ROOT / "jobs").glob("*.yaml"))
CLUSTERS = sorted((ROOT / "cluster_configs").glob("*.yaml"))


def test_shipped_files_exist():
    assert JOBS and CLUSTERS
    assert {c.name for c in CLUSTERS} >= {"local.yaml", "ssh.example.yaml", "slurm.example.yaml"}


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.name)
def test_shipped_job_loads(path):
    spec = load_job(str(path))
    assert spec.name and (spec.entrypoint.module or spec.entrypoint.script)


@pytest.mark.parametrize("path", CLUSTERS, ids=lambda p: p.name)
def test_shipped_cluster_loads(path):
    spec = load_cluster(str(path))
    assert spec.backend in path.name or spec.backend == "local"


@pytest.mark.parametrize("cluster_path", CLUSTERS, ids=lambda p: p.name)
@pytest.mark.parametrize("job_path", JOBS, ids=lambda p: p.name)
def test_shipped_job_plans_on_shipped_cluster(job_path, cluster_path):
    p = plan(load_job(str(job_path)), load_cluster(str(cluster_path)), nodes=2)
    assert len(p.nodes) == 2 and p.world.world_size >= 2


def test_no_cluster_file_means_this_machine(monkeypatch, tmp_path):
    assert load_cluster(None).backend == "local"
    # The embedded local cluster has the GPUs the NVIDIA driver shows, read without importing torch.
    gpus = tmp_path / "gpus"
    for i in range(4):
        (gpus / f"0000:0{i}:00.0").mkdir(parents=True)
    monkeypatch.setattr("launcher.backends.local.placement.NVIDIA_GPUS", str(gpus))
    monkeypatch.setattr("launcher.backends.local.placement.os.sched_getaffinity", lambda pid: {0, 1, 2})
    assert load_cluster(None) == DEFAULT_CLUSTER.model_copy(update={"gpus_per_node": 4, "cpus": 3})
    monkeypatch.setattr("launcher.backends.local.placement.NVIDIA_GPUS", str(tmp_path / "absent"))
    assert load_cluster(None).gpus_per_node == 0


def _write(tmp_path, text, name="spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_yaml_boolean_no_is_mixed_precision_no(tmp_path):
    spec = load_job(_write(tmp_path, "name: t\nentrypoint: {module: train}\nmixed_precision: no\n"))
    assert spec.mixed_precision == "no"


@pytest.mark.parametrize("word", ["yes", "true", "null"])
def test_other_yaml_booleans_are_not_precisions(tmp_path, word):
    with pytest.raises(KitError, match="mixed_precision"):
        load_job(_write(tmp_path, f"name: t\nentrypoint: {{module: train}}\nmixed_precision: {word}\n"))


def test_set_mixed_precision_no_is_the_string():
    j, _ = apply_overrides(job(mixed_precision="bf16"), cluster(LOCAL_CPU), Overrides(sets=("mixed_precision=no",)))
    assert j.mixed_precision == "no"


def test_hosts_as_strings_become_host_objects(tmp_path):
    spec = load_cluster(_write(tmp_path, "name: c\nbackend: ssh\nhosts: [a.example, b.example]\n"))
    assert spec.hosts == [Host(name="a.example"), Host(name="b.example")]
    assert all(isinstance(h, Host) and h.address is None and h.gpus is None for h in spec.hosts)


def test_mixed_host_forms(tmp_path):
    spec = load_cluster(_write(tmp_path, "name: c\nbackend: ssh\nhosts:\n  - a\n  - {name: b, gpus: 4}\n"))
    assert spec.hosts == [Host(name="a"), Host(name="b", gpus=4)]


def test_duplicate_hosts_rejected(tmp_path):
    with pytest.raises(KitError, match="duplicate host a"):
        load_cluster(_write(tmp_path, "name: c\nbackend: ssh\nhosts: [a, {name: a}]\n"))


def test_master_port_int_or_policy(tmp_path):
    assert load_cluster(_write(tmp_path, "name: c\nbackend: local\nmaster_port: 29600\n")).master_port == 29600
    spec = load_cluster(_write(tmp_path, "name: c\nbackend: local\nmaster_port: {base: 40000, span: 10}\n"))
    assert spec.master_port == PortPolicy(base=40000, span=10)


def test_flag_overrides_apply_and_inputs_are_unchanged():
    j, c = job(), cluster(SSH_GPU)
    before = (j.model_dump(), c.model_dump())
    ov = Overrides(nodes=2, gpus=4, strategy="deepspeed", mixed_precision="bf16", master_port=31000)
    j2, c2 = apply_overrides(j, c, ov)
    assert (j2.nodes, j2.gpus_per_node, j2.strategy, j2.mixed_precision) == (2, 4, "deepspeed", "bf16")
    assert c2.master_port == 31000
    assert (j.model_dump(), c.model_dump()) == before
    assert j2 is not j and c2 is not c


def test_set_overrides_nested_and_cluster_fields():
    j, c = job(strategy="deepspeed"), cluster(SSH_GPU)
    before = (j.model_dump(), c.model_dump())
    sets = ("deepspeed.zero_stage=3", "deepspeed.offload_param=cpu", "args=[--lr, '0.1']",
            "env.FOO=bar", "cluster.workdir=/x", "cluster.ssh.port=2222")
    j2, c2 = apply_overrides(j, c, Overrides(sets=sets))
    assert (j2.deepspeed.zero_stage, j2.deepspeed.offload_param) == (3, "cpu")
    assert j2.args == ["--lr", "0.1"] and j2.env == {"FOO": "bar"}
    assert c2.workdir == "/x" and c2.ssh.port == 2222 and c2.ssh.user == "train"
    assert c2.hosts == c.hosts
    assert (j.model_dump(), c.model_dump()) == before


def test_flag_and_set_of_one_field_must_agree():
    # `--nodes 2 --set nodes=3` used to give 3 silently; now it names both. Agreeing values are fine.
    with pytest.raises(KitError, match=r"^nodes: --nodes 2 conflicts with --set nodes=3; give one value$"):
        apply_overrides(job(), cluster(LOCAL_CPU), Overrides(nodes=2, sets=("nodes=3",)))
    j, _ = apply_overrides(job(), cluster(LOCAL_CPU), Overrides(nodes=2, sets=("nodes=2",)))
    assert j.nodes == 2


def test_overrides_are_revalidated():
    with pytest.raises(KitError, match=r"job \(after overrides\): deepspeed: offload_param needs zero_stage 3"):
        apply_overrides(job(), cluster(LOCAL_CPU), Overrides(sets=("deepspeed.offload_param=cpu",)))
    with pytest.raises(KitError, match=r"--set cluster.gpus=8: unknown key 'cluster.gpus'"):
        apply_overrides(job(), cluster(LOCAL_CPU), Overrides(sets=("cluster.gpus=8",)))


def test_no_overrides_returns_the_same_specs():
    j, c = job(), cluster(LOCAL_CPU)
    assert apply_overrides(j, c, Overrides()) == (j, c)


def test_plan_does_not_mutate_its_inputs():
    j, c = job(env={"A": "1"}, args=["--x"]), cluster(SSH_GPU, env={"B": "2"})
    before = (j.model_dump(), c.model_dump())
    plan(j, c, nodes=2, strategy="fsdp", sets=("env.C=x", "cluster.env.D=y"))
    assert (j.model_dump(), c.model_dump()) == before


def test_specs_are_frozen():
    j = job()
    with pytest.raises(Exception):
        j.nodes = 4


def test_set_env_number_stays_a_string():
    j, c = apply_overrides(job(), cluster(LOCAL_CPU), Overrides(sets=("env.OMP_NUM_THREADS=4", "cluster.env.N=1")))
    assert j.env == {"OMP_NUM_THREADS": "4"} and c.env == {"N": "1"}


def test_error_names_the_env_variable(tmp_path):
    with pytest.raises(KitError, match=r"env\.OMP_NUM_THREADS"):
        load_job(_write(tmp_path, "name: t\nentrypoint: {module: train}\nenv: {OMP_NUM_THREADS: 4}\n"))


def test_only_the_names_kit_sets_are_reserved(tmp_path):
    # KIT_TRAIN_CACHE is the training module's own knob: a job may set it.
    spec = load_job(_write(tmp_path, "name: t\nentrypoint: {module: train}\nenv: {KIT_TRAIN_CACHE: /data/cache}\n"))
    assert spec.env == {"KIT_TRAIN_CACHE": "/data/cache"}
    for name in ("KIT_RUN_ID", "KIT_MASTER_ADDR", "KIT_EXPECTED_STRATEGY"):
        with pytest.raises(KitError, match=f"{name} is set by kit itself"):
            load_job(_write(tmp_path, f"name: t\nentrypoint: {{module: train}}\nenv: {{{name}: x}}\n"))
