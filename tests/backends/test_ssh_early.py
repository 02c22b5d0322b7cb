"""The early logins (backends/ssh/early.py) guess each host's endpoint from the raw cluster YAML; the backend uses a
login only if the guess equals what the validated config resolves to. A guess that drifted from the schema's
defaults would silently lose the overlap, so the guess is compared with the real resolution here."""


import pytest
import yaml

from launcher.backends import registry
from launcher.backends.ssh.early import _endpoints
from launcher.commands.fastpath import FastStart
from launcher.core.request import Request
from launcher.spec import load_cluster
from launcher.transport.endpoint import resolve, ssh_settings

CONFIGS = {
    "minimal": {"name": "c", "backend": "ssh", "hosts": ["a", "b", "c"]},
    "full": {"name": "c", "backend": "ssh", "hosts": [{"name": "a", "address": "10.0.0.1"}, "b"],
             "ssh": {"user": "me", "port": 2222, "identity_file": "~/.ssh/id_x", "known_hosts": "/tmp/kh",
                     "connect_timeout": 3}},
    "port 22 given": {"name": "c", "backend": "ssh", "hosts": ["a"], "ssh": {"port": 22, "user": "u"}},
}


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_the_early_guess_is_what_the_validated_config_resolves_to(tmp_path, config):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(config))
    cluster = load_cluster(str(path))
    settings = ssh_settings(cluster.ssh)
    validated = [resolve(h.name, h.address, settings) for h in cluster.hosts[:2]]
    assert _endpoints(config, 2) == validated


def _request(tmp_path, job="name: j\nnodes: 1\n", **given) -> Request:
    job_path = tmp_path / "job.yaml"
    job_path.write_text(job)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(given.pop("cluster", {"name": "c", "backend": "ssh", "hosts": ["a", "b"]})))
    return Request(job=str(job_path), cluster=str(cluster), nodes=given.get("nodes"), sweep=given.get("sweep"),
                   sets=tuple(given.get("set", ())))


def _guess(request: Request):
    """What the cluster's backend's warm-up would log in to (backends/warmup.py), or None."""
    cluster = yaml.safe_load(open(request.cluster))
    warm = registry.warm_up(cluster.get("backend"))
    return warm.guess if warm is not None and warm.wants(request, cluster) else None


@pytest.mark.parametrize("given, hosts", [
    ({}, ["a"]),
    ({"job": "name: j\nnodes: 2\n"}, ["a", "b"]),
    ({"nodes": 2}, ["a", "b"]),
    ({"set": ["nodes=2"]}, ["a"]),   # a guess that misses costs only the early work: the backend checks it
], ids=["job's nodes", "two nodes", "--nodes", "job override"])
def test_early_logins_go_to_the_hosts_the_job_will_use(tmp_path, given, hosts):
    assert [e.name for e in _endpoints(*_guess(_request(tmp_path, **given)))] == hosts


def test_a_dry_run_warms_up_nothing(tmp_path):
    with FastStart(_request(tmp_path), dry_run=True) as fast:
        assert (fast.warm, fast.planner, fast.prepared()) == (None, None, None)
    assert _guess(_request(tmp_path)) is not None   # the same submission, for real, would log in


@pytest.mark.parametrize("given", [
    {"set": ["cluster.ssh.user=other"]},
    {"cluster": {"name": "c", "backend": "local"}},
    {"cluster": {"name": "c", "backend": "ssh", "hosts": ["a"], "ssh": {"accept_new_host_keys": True}}},
    {"sweep": "sweep.yaml"},
    {"job": "name: j\nsweep: {trials: 2}\n"},
    {"set": ["sweep.max_parallel=2"]},
    {"job": "[not, a, job]"},
    {"cluster": {"name": "c", "backend": "ssh", "hosts": ["a"], "ssh": {"connect_timeout": float("inf")}}},
    {"cluster": {"name": "c", "backend": "ssh", "hosts": ["a"], "ssh": {"host_timeout": float("nan")}}},
    {"cluster": {"name": "c", "backend": "ssh", "hosts": ["a"], "ssh": {"connect_timeout": "10"}}},
], ids=["cluster override", "not ssh", "accepting new keys", "--sweep", "job's sweep", "sweep override",
        "not a mapping", "infinite timeout", "nan timeout", "timeout not a number"])
def test_no_early_login_where_the_run_may_not_log_in_as_guessed(tmp_path, given):
    assert _guess(_request(tmp_path, **given)) is None


def test_a_login_thread_that_fails_says_nothing_and_leaves_no_login(capfd):
    """A setting the schema refuses later (a timeout too large for a socket) must not print a thread's traceback
    above kit's one line: the thread leaves no login, and the normal path reports the setting."""
    from launcher.backends.ssh.early import EarlyLogins
    endpoint = resolve("lo", "127.0.0.1", {"connect_timeout": 1e300})
    early = EarlyLogins([endpoint])
    assert early.take(endpoint) is None
    early.close()
    import sys
    sys.setswitchinterval(early.switch_interval)
    assert capfd.readouterr().err == ""
