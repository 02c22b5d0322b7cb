"""A real failure of the training module ends with one line that says why, and kit exits with the rank's code."""


import pytest
import yaml

from tests.launcher.localrun import LOCAL_CLUSTER, REPO, kit


@pytest.mark.slow
def test_bad_csv_prints_the_ranks_cause_as_the_last_line_and_exits_4(tmp_path):
    csv = tmp_path / "reviews.csv"
    csv.write_text("review,label\ngreat,pos\nawful,neg\n")  # no column named "text"
    job = tmp_path / "bad.yaml"
    job.write_text(yaml.safe_dump({
        "name": "bad-csv", "entrypoint": {"module": "train"}, "nodes": 2, "procs_per_node": 1,
        "args": ["--data", str(csv), "--output-dir", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")],
        "env": {"PYTHONPATH": str(REPO)}}))
    # Run from the repository: torch then logs its own paths relative to the working directory.
    result = kit("submit", str(job), "--cluster", LOCAL_CLUSTER, "--run-id", "bad-csv",
                 "--set", f"cluster.run_root={tmp_path / 'runs'}", cwd=REPO, timeout=300)
    console = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 4, "\n".join(console[-30:])
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("kit: run bad-csv failed: node ")
    assert "exited 4 (bad data): bad data: " in last and f"{csv}:1: " in last and "text" in last
    # torchrun's tracebacks and failure tables stay in the logs.
    assert not any("Traceback" in line or "ChildFailedError" in line or "torch/distributed" in line
                   for line in console)
    assert len(console) < 15, "\n".join(console)
