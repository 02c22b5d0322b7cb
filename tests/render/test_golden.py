"""Dry-run text for a matrix of strategies x backends x precisions, compared byte for byte with tests/golden/."""

from pathlib import Path

import pytest

from launcher.render.dryrun import render_text
from tests.launcher.planning import cluster, job, plan

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
RUN_ID = "golden-run"
UPDATE_HINT = (
    "if the change is intended, regenerate the golden files with: pytest tests/render/test_golden.py --update-golden"
)

STRATEGIES = {
    "ddp": {"strategy": "ddp"},
    "zero2": {"strategy": "deepspeed", "deepspeed": {"zero_stage": 2, "gradient_clipping": 1.0}},
    "zero3_offload": {"strategy": "deepspeed", "deepspeed": {"zero_stage": 3, "offload_optimizer": "cpu",
                                                             "offload_param": "cpu", "zero3_save_16bit_model": True}},
    "fsdp": {"strategy": "fsdp", "fsdp": {"version": 2, "transformer_layer_cls": "BertLayer",
                                          "state_dict_type": "FULL_STATE_DICT"}},
}
# Every backend with GPUs and two nodes; the local one simulates two nodes on this machine.
BACKENDS = {
    "local": ({"name": "workstation", "backend": "local", "gpus_per_node": 8}, {"gpus": 2}),
    "ssh": ({"name": "gpu-boxes", "backend": "ssh", "workdir": "/srv/kit", "gpus_per_node": 8,
             "python": "/srv/kit/venv/bin/python", "setup": ["source /srv/kit/venv/bin/activate"],
             "env": {"NCCL_SOCKET_IFNAME": "eth0"},
             "hosts": [{"name": "gpu-a", "address": "10.0.0.11"}, {"name": "gpu-b", "address": "10.0.0.12"}],
             "ssh": {"user": "train"}}, {}),
    "slurm": ({"name": "hpc", "backend": "slurm", "workdir": "/shared/kit", "gpus_per_node": 4,
               "setup": ["module load cuda/12.4"], "env": {"NCCL_IB_DISABLE": "0"},
               "slurm": {"partition": "gpu", "account": "ml", "qos": "normal", "time": "04:00:00",
                         "cpus_per_task": 32, "extra_sbatch": ["--exclusive"]}}, {}),
}
PRECISIONS = ("bf16", "fp16", "no")
MATRIX = [(s, b, m) for s in STRATEGIES for b in BACKENDS for m in PRECISIONS]
# The same plans with torchrun as each node's launcher (job `launcher: torchrun`), in bf16.
TORCHRUN = [(s, b, "bf16") for s in STRATEGIES for b in BACKENDS]


def rendered(strategy: str, backend: str, precision: str, launcher: str = "accelerate") -> str:
    base, overrides = BACKENDS[backend]
    spec = job(name="bert_cls", args=["--epochs", "1", "--out", "out dir"], batch_size_per_device=8,
               env={"TOKENIZERS_PARALLELISM": "false"}, mixed_precision=precision, launcher=launcher,
               **STRATEGIES[strategy])
    return render_text(plan(spec, cluster(base), run_id=RUN_ID, nodes=2, **overrides))


# The same job on 512 nodes of each backend (the local one simulates CPU nodes): the text stays one node in full,
# the others as a rule, within a page or two whatever the size.
SCALE_NODES = 512
SCALE_HOSTS = [{"name": f"gpu{i:03d}", "address": f"10.0.{i // 250}.{i % 250 + 1}"} for i in range(1, 513)]
SCALE_BACKENDS = {
    "local": ({"name": "workstation", "backend": "local", "gpus_per_node": 0, "procs_per_node": 1,
               "cpus": 2048}, {}),
    "ssh": ({**BACKENDS["ssh"][0], "hosts": SCALE_HOSTS}, {}),
    "slurm": BACKENDS["slurm"],
}


def rendered_at_scale(backend: str) -> str:
    base, overrides = SCALE_BACKENDS[backend]
    spec = job(name="bert_cls", args=["--epochs", "1"], batch_size_per_device=8, mixed_precision="bf16",
               strategy="ddp")
    return render_text(plan(spec, cluster(base), run_id=RUN_ID, nodes=SCALE_NODES, **overrides))


def check_golden(path: Path, text: str, update: bool) -> None:
    if update:
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"golden file {path} is missing; {UPDATE_HINT}")
    if text != path.read_text(encoding="utf-8"):
        pytest.fail(f"{path} differs from the rendered plan; {UPDATE_HINT}\n--- rendered:\n{text}")


@pytest.mark.parametrize("strategy, backend, precision", MATRIX, ids=["-".join(c) for c in MATRIX])
def test_dry_run_matches_golden(strategy, backend, precision, request):
    check_golden(GOLDEN / f"{strategy}-{backend}-{precision}.txt", rendered(strategy, backend, precision),
                 request.config.getoption("--update-golden"))


@pytest.mark.parametrize("strategy, backend, precision", TORCHRUN, ids=["-".join(c) for c in TORCHRUN])
def test_torchrun_dry_run_matches_golden(strategy, backend, precision, request):
    check_golden(GOLDEN / f"torchrun-{strategy}-{backend}-{precision}.txt",
                 rendered(strategy, backend, precision, launcher="torchrun"),
                 request.config.getoption("--update-golden"))


@pytest.mark.parametrize("backend", SCALE_BACKENDS)
def test_dry_run_at_512_nodes_matches_golden_and_fits_150_lines(backend, request):
    text = rendered_at_scale(backend)
    check_golden(GOLDEN / f"scale{SCALE_NODES}-ddp-{backend}-bf16.txt", text,
                 request.config.getoption("--update-golden"))
    assert text.count("\n") <= 150
    assert f"nodes 1-{SCALE_NODES - 1}: each the same as node 0" in text and "beyond that rule" not in text


def test_missing_or_different_golden_fails_with_the_regenerate_hint(tmp_path):
    path = tmp_path / "x.txt"
    with pytest.raises(pytest.fail.Exception, match="is missing.*--update-golden"):
        check_golden(path, "plan\n", update=False)
    path.write_text("old plan\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception, match="differs.*--update-golden"):
        check_golden(path, "plan\n", update=False)
    check_golden(path, "plan\n", update=True)
    check_golden(path, "plan\n", update=False)


def test_no_stray_golden_files():
    expected = ({f"{s}-{b}-{m}.txt" for s, b, m in MATRIX} | {f"torchrun-{s}-{b}-{m}.txt" for s, b, m in TORCHRUN}
                | {f"scale{SCALE_NODES}-ddp-{b}-bf16.txt" for b in SCALE_BACKENDS})
    assert {p.name for p in GOLDEN.glob("*.txt")} <= expected


def test_rendering_is_deterministic():
    assert rendered("zero3_offload", "slurm", "bf16") == rendered("zero3_offload", "slurm", "bf16")
