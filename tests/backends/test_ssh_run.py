"""A real 2-node run over SSH on two namespace hosts: one world, tagged logs, the dry-run's plan, hostile args."""

import json

import pytest

from tests.backends.sshrun import cluster, leftovers, node_log, workdir
from tests.launcher.localrun import kit, reports, write_job
from tests.backends.test_local_backend import HOSTILE_ARGS


@pytest.fixture(scope="module")
def ssh_run(ssh_hosts, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ssh_run")
    out = tmp / "out"
    out.mkdir()
    # --linger: both ranks stay up a moment after the all-reduce; a rank that exits while its peer is still in
    # gloo can abort at exit (SIGABRT, seen across hosts), which is the probe's race, not the launcher's.
    job = write_job(tmp, args=["--out", str(out), "--linger", "1", "--", *HOSTILE_ARGS])
    argv = ("submit", job, "--cluster", cluster(ssh_hosts, tmp), "--run-id", "ssh-two-node")
    dry = kit(*argv, "--dry-run", "--format", "json", cwd=workdir(ssh_hosts))
    assert dry.returncode == 0, dry.stderr
    result = kit(*argv, cwd=workdir(ssh_hosts), timeout=120)
    return tmp, out, result, json.loads(dry.stdout)


def test_two_hosts_form_one_world(ssh_run, ssh_hosts):
    tmp, out, result, _ = ssh_run
    assert result.returncode == 0, result.stderr + result.stdout
    got = reports(out)
    assert [(r["rank"], r["machine_rank"], r["dist_world"], r["allreduce_sum"]) for r in got] == \
        [(0, 0, 2, 3.0), (1, 1, 2, 3.0)]
    # Machine rank 0 ran on n1 and machine rank 1 on n2: each node's log starts with its setup line.
    assert "kit-test host n1" in node_log(ssh_hosts, "ssh-two-node", 0)
    assert "kit-test host n2" in node_log(ssh_hosts, "ssh-two-node", 1)


def test_output_is_tagged_like_local_runs(ssh_run):
    _, _, result, _ = ssh_run
    assert "[node0/rank0] probe rank 0/2 ready" in result.stdout
    assert "[node1/rank1] probe rank 1/2 ready" in result.stdout
    assert "[node0] kit-test host n1" in result.stdout
    assert all(line.startswith("[node") for line in result.stdout.splitlines())


def test_hostile_args_arrive_unchanged_and_run_nothing(ssh_run, ssh_hosts):
    tmp, out, _, _ = ssh_run
    assert all(r["argv"] == HOSTILE_ARGS for r in reports(out))
    for host in ssh_hosts.hosts:
        assert host.run(["sh", "-c", f"ls {workdir(ssh_hosts)} /root | grep -c pwned"], check=False).stdout \
            .strip() == "0"


def test_run_record_plan_equals_the_dry_run(ssh_run, ssh_hosts):
    _, _, result, dry = ssh_run
    record = f"{workdir(ssh_hosts)}/runs/ssh-two-node"
    assert json.load(open(f"{record}/plan.json")) == dry
    status = json.load(open(f"{record}/status.json"))
    assert status["state"] == "succeeded" and status["exit_code"] == 0
    nodes = status["nodes"]
    assert [(n["rank"], n["host"]) for n in nodes] == [(0, "n1"), (1, "n2")]
    assert all(n["pgid"] and n["start_ticks"] and n["remote_start"] for n in nodes)
    handle = status["handle"]
    assert handle["ssh"]["known_hosts"] == ssh_hosts.known_hosts and handle["accepted_host_keys"] == []


def test_nothing_of_the_run_is_left(ssh_run, ssh_hosts):
    assert leftovers(ssh_hosts, "ssh-two-node") == {}


def test_logs_runs_and_status_cover_ssh_runs(ssh_run, ssh_hosts):
    logs = kit("logs", "ssh-two-node", "--node", "1", cwd=workdir(ssh_hosts))
    assert "probe rank 1/2 ready" in logs.stdout and "kit-test host n2" in logs.stdout
    listed = kit("runs", cwd=workdir(ssh_hosts)).stdout
    assert any(line.startswith("ssh-two-node") and " ssh " in line and "succeeded" in line
               for line in listed.splitlines()), listed
    status = kit("status", "ssh-two-node", cwd=workdir(ssh_hosts)).stdout
    assert "host n1" in status and "host n2" in status and "state succeeded" in status


def test_record_stays_here_and_files_go_to_the_hosts_workdir(ssh_hosts, tmp_path):
    # The hosts' workdir is not the submitting directory (as with separate disks): the record and the streamed
    # logs are written here, the node's accelerate YAML is uploaded into the workdir (the watchdog is no file).
    here, remote = tmp_path / "here", tmp_path / "remote-wd"
    here.mkdir()
    remote.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "1"])
    # The checks run the setup lines too, in the same process that then starts the node: the node must still
    # start from the login's environment, its setup lines applied once.
    setup = ['echo "kit-test host $(hostname)"', 'export KIT_TEST_SETUPS=$((${KIT_TEST_SETUPS:-0} + 1))',
             'echo "kit-test setup lines ran $KIT_TEST_SETUPS time(s)"']
    argv = ("submit", job, "--cluster", cluster(ssh_hosts, tmp_path, workdir=str(remote), setup=setup),
            "--run-id", "ssh-elsewhere")
    # Each node in full (the plain dry-run states node 1 as node 0's rule).
    dry = "".join(kit(*argv, "--dry-run", "--node", str(k), cwd=here).stdout for k in (0, 1))
    result = kit(*argv, cwd=here, timeout=120)
    assert result.returncode == 0, result.stderr
    # The dry-run said which file goes to which host:path; the hosts' (here shared) workdir holds exactly those.
    said = {line.split()[0] for line in dry.splitlines() if line.startswith("    n") and ":/" in line}
    assert said == {f"{h.name}:{remote}/runs/ssh-elsewhere/accelerate.node{r}.yaml"
                    for r, h in enumerate(ssh_hosts.hosts[:2])}
    there = {str(p) for p in (remote / "runs" / "ssh-elsewhere").iterdir() if p.is_file()}  # not the ranks' logs
    assert {s.split(":", 1)[1] for s in said} == there
    assert "probe rank 1/2 ready" in (here / "runs" / "ssh-elsewhere" / "node1.log").read_text()
    assert "kit-test setup lines ran 1 time(s)" in (here / "runs" / "ssh-elsewhere" / "node0.log").read_text()
    assert (remote / "runs" / "ssh-elsewhere" / "accelerate.node1.yaml").is_file()
    assert not (remote / "runs" / "ssh-elsewhere" / "status.json").exists()
    assert "state succeeded" in kit("status", "ssh-elsewhere", cwd=here).stdout
