"""SSH records are data, never code, and SSH runs end with the truth (issue 21): a record whose fields carry shell
text or whose file anyone else could have written makes kit log in nowhere; a setup line that reads stdin gets
EOF instead of hanging the checks, and checks that do hang say where; kit killed during the checks leaves a "lost"
record, not "starting" for ever; a host whose sshd session is killed mid-run ends the run as a lost connection."""

import json
import os
import signal
import time

import pytest

from launcher.backends.ssh import preflight as ssh_preflight
from launcher.cli import main
from tests.backends.sshrun import cluster, leftovers, workdir
from tests.launcher.localrun import kit, kit_background, reports, wait_for, write_job


def _record(here, run_id, ssh_hosts, **node):
    """A record of an SSH run whose supervisor is gone (so status/cancel ask the hosts), with node 0 on n1."""
    run = os.path.join(here, "runs", run_id)
    os.makedirs(run)
    status = {"run_id": run_id, "job": "x", "backend": "ssh", "state": "running", "supervisor_pid": 999999,
              "supervisor_start": 1.0, "ssh": {"user": ssh_hosts.user, "identity_file": ssh_hosts.identity_file,
                                              "known_hosts": ssh_hosts.known_hosts, "config_file": ssh_hosts.ssh_config},
              "nodes": [{"rank": 0, "host": "n1", "address": ssh_hosts.hosts[0].address, "pid": 1, **node}]}
    with open(os.path.join(run, "status.json"), "w") as f:
        json.dump(status, f)
    return run


def test_a_record_is_data_never_code(ssh_hosts, tmp_path):
    here = str(tmp_path)
    n1 = ssh_hosts.hosts[0]
    marker = f"/tmp/kit-pwned-{os.getpid()}"
    _record(here, "evil-ticks", ssh_hosts, start_ticks=f"$(echo ran-as-$(id -un) > {marker})")
    for argv in (("runs",), ("status", "evil-ticks"), ("cancel", "evil-ticks")):
        r = kit(*argv, cwd=here, timeout=120)
        said = r.stdout + r.stderr
        assert "corrupt" in said or "is unreadable (nodes[0].start_ticks: " in said, (argv, said)
    assert n1.run(["sh", "-c", f"test -e {marker} && echo yes || echo no"]).stdout.strip() == "no"

    # A well-formed record written by someone else (or writable by others): kit logs in with none of its settings.
    # Its ssh config would run a command on this machine (ProxyCommand) if kit used it.
    proxied = tmp_path / "proxied"
    evil_config = tmp_path / "evil_config"
    evil_config.write_text(f"Host n1\n  ProxyCommand sh -c 'touch {proxied}; exec nc %h %p'\n")
    run = _record(here, "foreign", ssh_hosts, start_ticks="12345")
    with open(os.path.join(run, "status.json")) as f:
        data = json.load(f)
    data["ssh"]["config_file"] = str(evil_config)
    with open(os.path.join(run, "status.json"), "w") as f:
        json.dump(data, f)
    os.chown(os.path.join(run, "status.json"), 65534, 65534)
    s = kit("status", "foreign", cwd=here, timeout=60)
    assert "state untrusted" in s.stdout and "belongs to user nobody, not you" in s.stdout, s.stdout
    os.chown(os.path.join(run, "status.json"), 0, 0)
    os.chmod(os.path.join(run, "status.json"), 0o666)
    s = kit("status", "foreign", cwd=here, timeout=60)
    assert "is writable by others" in s.stdout, s.stdout
    assert not proxied.exists()


def test_setup_lines_get_no_stdin_and_a_hanging_check_says_where(ssh_hosts, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    reading = cluster(ssh_hosts, tmp_path, setup=["read -r kit_line || true", "cat > /dev/null"])
    started = time.monotonic()
    r = kit("submit", job, "--cluster", reading, "--run-id", "ssh-stdin", cwd=workdir(ssh_hosts), timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert time.monotonic() - started < 60 and len(reports(out)) == 2

    # A setup line that hangs whatever its stdin: the checks end at their bound with the step named.
    monkeypatch.setattr(ssh_preflight, "CHECK_TIMEOUT", 4.0)
    monkeypatch.chdir(tmp_path)   # kit runs in this process here: the record would go under ./runs
    hanging = cluster(ssh_hosts, tmp_path, setup=["echo about to wait", "sleep 60"])
    capsys.readouterr()
    code = main(["submit", job, "--cluster", hanging, "--run-id", "ssh-hang"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "host n1: the node's setup lines did not finish within 4 s (its last output: about to wait)" in err, err
    assert not os.path.exists(tmp_path / "runs" / "ssh-hang")
    assert wait_for(lambda: leftovers(ssh_hosts, "ssh-hang") == {}, timeout=30)


def test_kit_killed_during_the_checks_leaves_a_lost_record(ssh_hosts, tmp_path):
    here = tmp_path / "here"
    here.mkdir()
    job = write_job(tmp_path, args=["--out", str(tmp_path)])
    slow = cluster(ssh_hosts, tmp_path, setup=["sleep 20"])
    proc = kit_background("submit", job, "--cluster", slow, "--run-id", "ssh-killed", cwd=here)
    status = here / "runs" / "ssh-killed" / "status.json"
    assert wait_for(status.exists, timeout=30), proc.stdout.read() if proc.poll() is not None else ""
    time.sleep(1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    s = kit("status", "ssh-killed", cwd=here, timeout=60)
    assert "state lost" in s.stdout, s.stdout + s.stderr
    assert wait_for(lambda: leftovers(ssh_hosts, "ssh-killed") == {}, timeout=40)


@pytest.mark.parametrize("victim", ["n2"])
def test_a_killed_sshd_session_ends_the_run_as_a_lost_connection(ssh_hosts, tmp_path, victim):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "300"])
    here = workdir(ssh_hosts)
    proc = kit_background("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-cut", cwd=here)
    try:
        assert wait_for(lambda: len(reports(out)) == 2, timeout=120), "ranks never reported"
        host = next(h for h in ssh_hosts.hosts if h.name == victim)
        # The per-login session processes ("sshd: root@notty"), never the listener ("sshd: /usr/sbin/sshd -f ..."):
        # later tests log in to this host again.
        sessions = [p for p in host.processes() if p["cmdline"] and p["cmdline"][0].startswith("sshd:")
                    and "sshd -f" not in " ".join(p["cmdline"]) and "/usr/sbin/sshd" not in " ".join(p["cmdline"])]
        assert sessions, [p["cmdline"] for p in host.processes()]
        killed = 0
        for p in sessions:
            try:
                os.kill(p["pid"], signal.SIGKILL)
                killed += 1
            except ProcessLookupError:   # a session's process that ended with its parent, killed just before
                pass
        assert killed, sessions
        assert any("sshd" in " ".join(p["cmdline"]) for p in host.processes()), "the listener must live on"
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 255, output[-3000:]
    assert f"kit: run ssh-cut failed: node 1 ({victim}) lost: the SSH session to {victim} ended without the " \
           f"node's exit status" in output, output[-3000:]
    assert wait_for(lambda: leftovers(ssh_hosts, "ssh-cut") == {}, timeout=60)


def _logins(ssh_hosts) -> int:
    """Sessions the hosts' sshd accepted so far (each host's sshd logs one line per login)."""
    return sum(open(os.path.join(h.dir, "sshd.log")).read().count("Accepted publickey") for h in ssh_hosts.hosts)


def test_a_lost_run_is_found_lost_once_and_listed_without_logins_after(ssh_hosts, tmp_path):
    """Issue 29, finding 5: kit killed while its run trains; the first `kit runs` asks the hosts (the nodes'
    watchdogs stopped the run), writes `lost` into the record, and later listings log in nowhere."""
    here = tmp_path / "here"
    here.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, nodes=2, args=["--out", str(out), "--linger", "300"])
    proc = kit_background("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-gone", cwd=here)
    assert wait_for(lambda: len(reports(out)) == 2, timeout=90), proc.stdout.read() if proc.poll() is not None else ""
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert wait_for(lambda: leftovers(ssh_hosts, "ssh-gone") == {}, timeout=40)
    logins = _logins(ssh_hosts)
    first = kit("runs", cwd=here, timeout=60)
    assert _logins(ssh_hosts) > logins   # the first look asked the hosts (the counter sees logins)
    assert "ssh-gone" in first.stdout and "lost" in first.stdout, first.stdout + first.stderr
    with open(here / "runs" / "ssh-gone" / "status.json") as f:
        assert json.load(f)["state"] == "lost"
    before = _logins(ssh_hosts)
    for _ in range(2):
        again = kit("runs", cwd=here, timeout=60)
        assert "lost" in again.stdout, again.stdout
    assert _logins(ssh_hosts) == before
