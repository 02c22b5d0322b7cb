"""The one-line failure of an SSH run names what the failing rank said last on stderr, read from its own teed
stderr on its host: the node log interleaves the rank's stdout and stderr, so its last line may be stdout."""

import os

from tests.backends.sshrun import cluster, leftovers
from tests.launcher.localrun import kit, write_job


def test_the_failing_ranks_own_stderr_is_fetched_from_its_host(ssh_hosts, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    # The probe prints its message on stderr, then "ready" on stdout, then exits 4: "ready" often lands last in
    # the node log. kit runs here, away from the hosts' workdir: the record does not see the rank logs.
    job = write_job(tmp_path, args=["--out", str(out), "--fail-rank", "1", "--fail-code", "4",
                                    "--fail-message", "bad data: reviews.csv:7: no such column"])
    here = tmp_path / "submitter"
    here.mkdir()
    r = kit("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-said", cwd=here, timeout=120)
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]
    assert ("kit: run ssh-said failed: node 1 (n2) rank 1 exited 4: bad data: reviews.csv:7: no such "
            "column") in r.stderr, r.stderr
    copied = [os.path.join(d, f) for d, _, fs in os.walk(here / "runs" / "ssh-said" / "node1.ranks") for f in fs]
    assert copied and all(p.endswith("stderr.log") for p in copied), copied
    assert leftovers(ssh_hosts, "ssh-said") == {}
