"""Every way a secret enters a plan, on every backend: its value is in no command, generated file, dry-run or
run record, while the plan still holds it for delivery out of band. (Real runs: test_env_runs.py.)"""

import pytest

from launcher import records
from launcher.render.dryrun import render_json, render_text
from launcher.render.shell import node_command
from launcher.secrets import MASK, is_secret, mask_env
from launcher.spec import Overrides, apply_overrides
from tests.launcher.planning import LOCAL_CPU, SLURM_GPU, SSH_GPU, cluster, job, plan

VALUE = "zz-s3cret-value-91"
# name -> (job fields, cluster fields, overrides) for each way in.
WAYS = {
    "job env, secret-looking name": ("HF_TOKEN", {"env": {"HF_TOKEN": VALUE}}, {}, {}),
    "cluster env, secret-looking name": ("WANDB_API_KEY", {}, {"env": {"WANDB_API_KEY": VALUE}}, {}),
    "secret_env, value in job env": ("DB_URL", {"env": {"DB_URL": VALUE}, "secret_env": ["DB_URL"]}, {}, {}),
    "secret_env, value in cluster env": ("DB_URL", {"secret_env": ["DB_URL"]}, {"env": {"DB_URL": VALUE}}, {}),
    "secret_env, value from --set env.X": ("DSN", {"secret_env": ["DSN"]}, {}, {"sets": (f"env.DSN={VALUE}",)}),
    "secret_env, value from --set cluster.env.X": (
        "CACHE_URL", {"secret_env": ["CACHE_URL"]}, {}, {"sets": (f"cluster.env.CACHE_URL={VALUE}",)}),
    "--set env.X, secret-looking name": ("API_TOKEN", {}, {}, {"sets": (f"env.API_TOKEN={VALUE}",)}),
}
BACKENDS = {"local": LOCAL_CPU, "ssh": SSH_GPU, "slurm": SLURM_GPU}
CASES = [(w, b) for w in WAYS for b in BACKENDS]


def _build(way: str, backend: str):
    name, job_fields, cluster_fields, overrides = WAYS[way]
    base = BACKENDS[backend]
    spec_cluster = cluster(base, **{**cluster_fields, "env": {**base.get("env", {}), **cluster_fields.get("env", {})}})
    spec_job = job(nodes=2, **job_fields)
    return name, spec_job, spec_cluster, plan(spec_job, spec_cluster, **overrides)


@pytest.mark.parametrize("way, backend", CASES, ids=[f"{b}: {w}" for w, b in CASES])
def test_secret_value_in_no_artifact(way, backend, tmp_path):
    name, spec_job, spec_cluster, p = _build(way, backend)
    # The plan keeps the value for delivery, and knows the name is secret.
    assert all(n.env[name] == VALUE and name in n.secret_env for n in p.nodes)
    assert not any(VALUE in n.command or VALUE in " ".join(n.argv) for n in p.nodes)
    assert not any(VALUE in content for content in p.files.values())   # sbatch script, YAML, JSON
    for out in (render_text(p), render_json(p)):
        assert VALUE not in out and f"{name}={MASK}" in out.replace('": "', "=")
    # The record as `kit submit` writes it (resolved specs, plan, generated files).
    resolved_job, resolved_cluster = apply_overrides(spec_job, spec_cluster, Overrides(**WAYS[way][3]))
    record = records.create(str(tmp_path), p, resolved_job, resolved_cluster)
    written = {str(f.relative_to(tmp_path)): f.read_text() for f in tmp_path.rglob("*") if f.is_file()}
    assert {"job.yaml", "cluster.yaml", "plan.json", "status.json"} <= {k.rsplit("/", 1)[-1] for k in written}
    assert [path for path, text in written.items() if VALUE in text] == []
    assert record.path.endswith(p.run_dir)


def test_passthrough_value_never_enters_the_plan():
    p = plan(job(secret_env=["UPSTREAM_URL"]), cluster(SSH_GPU))
    assert "UPSTREAM_URL" not in p.nodes[0].env and p.nodes[0].secret_env == ("UPSTREAM_URL",)
    assert "UPSTREAM_URL" not in p.nodes[0].command and "UPSTREAM_URL=" + MASK in render_text(p)


def test_node_command_leaves_out_secret_looking_and_declared_names():
    env = {"HF_TOKEN": "a1", "DB_URL": "b2", "PLAIN": "c3", "TOKENIZERS_PARALLELISM": "false"}
    text = node_command("/w", (), env, ("python", "x.py"), secret_env=("DB_URL",))
    assert "a1" not in text and "b2" not in text
    assert "export PLAIN=c3" in text and "export TOKENIZERS_PARALLELISM=false" in text


def test_masking_uses_both_rules():
    assert is_secret("GITHUB_TOKEN") and is_secret("DB_URL", ("DB_URL",)) and not is_secret("DB_URL")
    assert not is_secret("TOKENIZERS_PARALLELISM")
    assert mask_env({"DB_URL": "x", "A_KEY": "y", "P": "z"}, ("DB_URL",)) == {"DB_URL": MASK, "A_KEY": MASK, "P": "z"}
