"""kit's errors (issue 36): the user's mistake exits 2, a scheduler's refusal 69, a record kit cannot read 74, each
one `kit: error:` line; an error that names an option carries it as data, said `--nodes 2` by the command line and
`nodes=2` by the Python API, from the same error."""

import json
import os
import pickle
import shutil

import pytest
import yaml

import launcher as kit_api
from launcher.api import keyword
from launcher.errors import KitError, Option, RecordError, SchedulerError, flag, per_line
from tests.launcher.localrun import PROBE, REPO, kit, write_job

JOB = f"{REPO}/jobs/bert_cls.yaml"


def _fake_slurm(tmp_path, sbatch_says: str) -> dict:
    """SLURM's client commands on PATH as scripts: a partition of 2 nodes without GPUs, and an sbatch that refuses
    with `sbatch_says` on stderr (exit 1), as a real sbatch refuses an unknown account."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    scripts = {
        "scontrol": ('case "$2" in\n'
                     '  partition) echo "PartitionName=debug Default=YES State=UP Nodes=n[1-2]";;\n'
                     '  node) echo "NodeName=n1 Gres=(null)"; echo "NodeName=n2 Gres=(null)";;\n'
                     'esac\n'),
        "sbatch": f'echo {sbatch_says!r} >&2\nexit 1\n',
        "srun": "exit 0\n",
        "squeue": "exit 0\n",
    }
    for name, body in scripts.items():
        (bindir / name).write_text("#!/bin/sh\n" + body)
        (bindir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}


def test_a_scheduler_that_refuses_the_job_exits_69_with_its_own_words(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(PROBE, work / "probe.py")
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"name": "refused", "entrypoint": {"script": "probe.py"}, "nodes": 2}))
    cluster = tmp_path / "slurm.yaml"
    cluster.write_text(yaml.safe_dump({"name": "fake", "backend": "slurm", "workdir": str(work),
                                       "slurm": {"partition": "debug"}}))
    said = "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"
    r = kit("submit", str(job), "--cluster", str(cluster), "--gpus", "0", "--run-id", "refused", cwd=tmp_path,
            env=_fake_slurm(tmp_path, said))
    assert r.returncode == 69, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"kit: error: sbatch refused the job: {said}", r.stderr
    with open(work / "runs" / "refused" / "status.json") as f:
        assert json.load(f)["state"] == "failed"


def test_a_corrupt_run_record_exits_74_and_a_users_mistake_2(tmp_path):
    bad = tmp_path / "runs" / "bad"
    bad.mkdir(parents=True)
    (bad / "status.json").write_text('{"state": "runn')
    r = kit("status", "bad", cwd=tmp_path)
    assert r.returncode == 74, r.stderr
    assert r.stderr.startswith("kit: error: run record ") and "status.json is unreadable" in r.stderr, r.stderr
    r = kit("submit", write_job(tmp_path), "--nodes", "0", "--dry-run", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("kit: error: --nodes 0: "), r.stderr


def test_the_classes_are_kit_errors_with_their_own_codes_and_fields():
    refused = SchedulerError("sbatch refused the job: no", command="sbatch", said="no")
    unreadable = RecordError("run record x: status.json is unreadable", path="x")
    assert isinstance(refused, KitError) and isinstance(unreadable, KitError)
    assert (KitError("x").exit_code, refused.exit_code, unreadable.exit_code) == (2, 69, 74)
    assert kit_api.SchedulerError is SchedulerError and kit_api.RecordError is RecordError
    back = pickle.loads(pickle.dumps(refused))   # as the planner process hands it over
    assert (type(back), str(back), back.command, back.said) == (SchedulerError, str(refused), "sbatch", "no")


def test_one_error_is_worded_by_each_face_in_its_own_terms():
    error = KitError(Option("nodes", 4), ": 4 nodes requested but the cluster lists 2 hosts; lower ",
                     Option("nodes"), " or add hosts; pick another ", Option("run_id"), ", e.g. x-2")
    assert str(error) == ("--nodes 4: 4 nodes requested but the cluster lists 2 hosts; lower --nodes or add hosts; "
                          "pick another --run-id, e.g. x-2")
    assert error.worded(keyword) == ("nodes=4: 4 nodes requested but the cluster lists 2 hosts; lower nodes or add "
                                     "hosts; pick another run_id, e.g. x-2")
    said = per_line([(Option("set", "deepspeed.zero_stage=7"), ": Input should be 0, 1, 2 or 3"),
                     ("unknown key 'lr'; give it ", Option("args", ["--lr", "0.1"]))])
    assert said.worded(keyword) == ("set['deepspeed.zero_stage']=7: Input should be 0, 1, 2 or 3\nkit: error: "
                                    "unknown key 'lr'; give it in args=['--lr', '0.1']")
    assert str(said) == ("--set deepspeed.zero_stage=7: Input should be 0, 1, 2 or 3\nkit: error: unknown key "
                         "'lr'; give it after --: kit submit JOB -- --lr 0.1")


@pytest.mark.parametrize("flags,given,cli,api", [
    (["--set", "deepspeed.zero_stage=7"], {"set": {"deepspeed.zero_stage": 7}},
     "--set deepspeed.zero_stage=7: Input should be 0, 1, 2 or 3",
     "set['deepspeed.zero_stage']=7: Input should be 0, 1, 2 or 3"),
    (["--set", "lr=0.1"], {"set": {"lr": 0.1}},
     "give it after --: kit submit JOB -- --lr 0.1", "give it in args=['--lr', '0.1']"),
    (["--gpus", "-1"], {"gpus": -1},
     "--gpus -1: Input should be greater than or equal to 0", "gpus=-1: Input should be greater than or equal to 0"),
    (["--port", "70000"], {"port": 70000}, "--port 70000: ", "port=70000: "),
])
def test_the_cli_and_the_api_word_the_same_real_error(tmp_path, flags, given, cli, api):
    r = kit("submit", JOB, *flags, "--dry-run", cwd=tmp_path)
    assert r.returncode == 2 and cli in r.stderr, r.stderr
    with pytest.raises(KitError) as e:
        kit_api.plan(JOB, **given)
    assert api in str(e.value) and "--" not in str(e.value).replace("'--lr'", ""), str(e.value)
    # The API's error, said in the command line's words, is the line the CLI printed.
    assert r.stderr == f"kit: error: {e.value.worded(flag)}\n", (e.value.worded(flag), r.stderr)
