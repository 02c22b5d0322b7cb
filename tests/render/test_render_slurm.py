"""The sbatch script's preemption settings: warning signal to the batch shell, requeue, appended logs, bounded
requeues, per-node exit codes; and the whole script is valid bash."""

import os
import subprocess

import pytest
from pydantic import ValidationError

from tests.launcher.planning import SLURM_GPU, cluster, job, plan

SCRIPT = "runs/test-run/job.sbatch"


def _script(**slurm) -> str:
    spec = cluster(SLURM_GPU, slurm={**SLURM_GPU["slurm"], **slurm})
    return plan(job(nodes=2), spec).files[SCRIPT]


def test_defaults_warn_the_batch_shell_and_allow_requeues():
    text = _script()
    for line in ("#SBATCH --signal=B:USR1@180", "#SBATCH --requeue", "#SBATCH --open-mode=append",
                 'if [ "$kit_restarts" -gt 3 ]; then', "trap kit_warned USR1"):
        assert line in text.splitlines(), line
    assert 'scontrol requeue "$SLURM_JOB_ID"' in text
    # The step runs in the background so the trap is not deferred until the step ends.
    assert "' &\nkit_step=$!\n" in text


def test_signal_time_and_requeue_bound_are_configurable():
    text = _script(signal_before=600, max_requeues=0)
    assert "#SBATCH --signal=B:USR1@600" in text.splitlines()
    assert 'if [ "$kit_restarts" -gt 0 ]; then' in text
    assert 'kit_warned() { if [ "$kit_restarts" -lt 0 ]' in text


@pytest.mark.parametrize("field,value", [("signal_before", 5), ("max_requeues", -1)])
def test_bad_preemption_settings_are_rejected(field, value):
    with pytest.raises(ValidationError):
        cluster(SLURM_GPU, slurm={**SLURM_GPU["slurm"], field: value})


def test_each_task_writes_its_exit_code_and_the_script_is_valid_bash():
    text = _script()
    assert 'echo "$kit_code" > "runs/test-run/node${SLURM_NODEID}.exit"' in text
    assert "--open-mode=append --output=runs/test-run/node%n.log" in text
    r = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_rank_tags_and_rank_logs_resolve_inside_each_task_and_job_words_stay_literal(tmp_path):
    """Each task's own shell turns ${SLURM_NODEID} into its node number in kit's tag template and rank log
    directory; the job's arguments and env values reach the program unchanged, even when they look alike."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE" "$JOB_OUT" "$@"\n')
    fake.chmod(0o755)
    spec = cluster(SLURM_GPU, workdir=str(tmp_path), setup=[], python=str(fake))
    p = plan(job(nodes=2, args=["--out", "ckpt-${SLURM_NODEID}"], env={"JOB_OUT": "o-${SLURM_NODEID}"}), spec)
    assert p.nodes[0].command == p.nodes[1].command
    env = {"PATH": os.environ["PATH"], "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "n[1-2]"}
    r = subprocess.run(["bash", "-c", p.nodes[1].command], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    words = r.stdout.split("\n")[:-1]
    assert words[:2] == ["[node1/rank${rank}] ", "o-${SLURM_NODEID}"]
    assert words[words.index("--tee") + 1:words.index("--log_dir") + 2] == ["3", "--log_dir", "runs/test-run/node1.ranks"]
    assert words[-2:] == ["--out", "ckpt-${SLURM_NODEID}"]
