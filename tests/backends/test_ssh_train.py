"""The reference training module on two SSH hosts (1 process each, gloo) ends with the metrics of the same
2-node run on the local backend: same seed, same arguments, same numbers; on hosts with disks of their own, both
build the same tokenizer, and one whose cache holds another stops the run with one line naming it."""

import json
import os
import re
import subprocess

import yaml

from tests.backends.sshrun import cluster, node_log, workdir
from tests.train.launch import PYTHON, REPO, job_spec, run_job
from tests.train.support import synthetic_rows, tiny_args, write_csv


def _numbers(metrics: dict) -> dict:
    return {"steps": metrics["steps"], "world_size": metrics["world_size"],
            "test": {k: v for k, v in metrics["test"].items() if isinstance(v, (int, float))}}


def test_two_host_training_equals_the_local_run(ssh_hosts, tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    env = {"PYTHONPATH": str(REPO)}  # the module lives in the repo; the hosts' workdir is elsewhere
    local = run_job(tmp_path, "ddp", tiny_args(data, tmp_path / "out-local", tmp_path / "cache-local",
                                               "--max-steps", "4"), machines=2, extra_env=env, timeout=300)
    assert local.returncode == 0, local.stdout[-3000:]

    want = json.loads((tmp_path / "out-local" / "metrics.json").read_text())
    # Through `accelerate launch` on each host, and through torchrun with accelerate's settings in the ranks'
    # environment (job `launcher: torchrun`): the same world, the same numbers.
    for launcher in ("accelerate", "torchrun"):
        out, run_id = tmp_path / f"out-ssh-{launcher}", f"ssh-train-{launcher}"
        args = tiny_args(data, out, tmp_path / f"cache-ssh-{launcher}", "--max-steps", "4")
        job = tmp_path / f"job-ssh-{launcher}.yaml"
        job.write_text(yaml.safe_dump(job_spec("ddp", args, 2, 2, 2, env, {"launcher": launcher})))
        cfg = cluster(ssh_hosts, tmp_path, cpu_threads_per_process=1)  # as the local cluster: same float sums
        remote = subprocess.run([PYTHON, "-m", "launcher", "submit", str(job), "--cluster", cfg, "--run-id",
                                 run_id], cwd=workdir(ssh_hosts), capture_output=True, text=True, timeout=300)
        assert remote.returncode == 0, remote.stderr[-3000:] + remote.stdout[-3000:]
        assert "kit-test host n1" in node_log(ssh_hosts, run_id, 0)
        assert "kit-test host n2" in node_log(ssh_hosts, run_id, 1)

        got = json.loads((out / "metrics.json").read_text())
        a, b = _numbers(got), _numbers(want)
        assert (a["steps"], a["world_size"]) == (b["steps"], b["world_size"]) == (4, 2)
        assert got["strategy"] == want["strategy"] == "ddp"
        assert a["test"].keys() == b["test"].keys() and a["test"]
        for key, value in b["test"].items():
            # Seen: losses differ by ~5e-5 between the two backends (reduction order on 2 shared cores).
            assert abs(a["test"][key] - value) <= 1e-3 * max(1.0, abs(value)), (launcher, key)


def _tokenizers(disks, host) -> dict:
    """The training module's tokenizer files in the host's own cache (~/.cache/kit/train), read on the host."""
    files = disks.files(host, f"{disks.paths['cache']}/train")
    return {name: data for name, data in files.items() if name.startswith("tokenizer-")}


SWAP = """
import glob, json, sys
(path,) = glob.glob(sys.argv[1] + "/train/tokenizer-*/tokenizer.json")
spec = json.load(open(path))
vocab = spec["model"]["vocab"]
vocab["很"], vocab["好"] = vocab["好"], vocab["很"]
json.dump(spec, open(path, "w"), ensure_ascii=False)
"""


def test_two_hosts_with_their_own_disks_build_one_tokenizer(ssh_hosts, ssh_own_disks, tmp_path):
    """Code by sync and the cache on each host's own disk: both build the reference job's tokenizer (the review
    corpus, 6000 tokens: the library's trainer gave each node another one) byte for byte, and train; then one host
    whose cache holds another tokenizer stops the run with the line that names it."""
    disks = ssh_own_disks
    n1, n2 = ssh_hosts.hosts[:2]
    workdir = disks.paths["workdir"]
    args = ["--output-dir", "out", "--max-length", "32", "--max-steps", "3", "--batch-size", "8",
            "--eval-batch-size", "128", "--log-every", "1", "--resume", "no", "--no-save-model", "--pretrain-epochs", "0"]
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(job_spec("ddp", args, 2, 2, 2, None)))
    cfg = cluster(ssh_hosts, tmp_path, cpu_threads_per_process=1, workdir=workdir,
                  sync={"source": str(REPO), "include": ["train/**"]})

    def submit(run_id):
        return subprocess.run([PYTHON, "-m", "launcher", "submit", str(job), "--cluster", cfg, "--run-id", run_id],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)

    run = submit("own-disks")
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-3000:]
    for rank, host in enumerate((n1, n2)):
        assert f"[node{rank}] kit-test host {host.name}" in run.stdout
        # The module ran from the copy that sync made on the host's disk (its bytecode is written there).
        assert any(name.startswith("train/__pycache__/wordpiece.") for name in disks.files(host, workdir))
    assert not os.listdir(workdir)   # this machine sees none of it
    one, two = _tokenizers(disks, n1), _tokenizers(disks, n2)
    assert any(name.endswith("/tokenizer.json") for name in one) and one == two
    metrics = json.loads(disks.read(n1, f"{workdir}/out/metrics.json"))
    assert (metrics["steps"], metrics["world_size"], metrics["test"]["examples"]) == (3, 2, 1741)

    n2.run([PYTHON, "-c", SWAP, disks.paths["cache"]])
    run = submit("own-disks-swapped")
    assert run.returncode != 0 and "exited 3" in run.stderr, run.stderr[-3000:]   # the world check's code
    said = [line for line in (run.stdout + run.stderr).splitlines() if "the data pipeline differs" in line]
    assert said and all(re.search(r"world check failed: the data pipeline differs between nodes: tokenizer "
                                  r"[0-9a-f]{10} on node 0 \(n1\), [0-9a-f]{10} on node 1 \(n2\); delete the cache "
                                  r"\(~/.cache/kit/train\) or give every node the same --cache-dir$", line)
                        for line in said), said
