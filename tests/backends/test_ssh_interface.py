"""The network interface gloo uses is the one that routes to the master, chosen on each node at start (issue 20).
Here n2 has a second interface (one end of a veth pair of its own) that cannot reach the other hosts and its hostname resolves to that interface's
address, as on a multi-homed machine whose name maps to a management network: gloo's own default (the address the
hostname resolves to) would advertise an address n1 cannot reach; kit's choice is eth0."""

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.launcher.localrun import kit, reports, write_job


def test_the_interface_routing_to_the_master_is_used(ssh_hosts, tmp_path):
    n1, n2 = ssh_hosts.hosts[:2]
    dead = n2.address.rsplit(".", 2)[0].replace("10.200", "10.201") + ".2.12"
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text(f"127.0.0.1 localhost\n{n1.address} n1\n{dead} n2\n")
    n2.run(["sh", "-c", f"ip link add kit0 type veth peer name kit1 && ip addr add {dead}/24 dev kit0 && "
                        f"ip link set kit1 up && ip link set kit0 up && "
                        f"mount --bind {hosts_file} /etc/hosts"])
    try:
        out = tmp_path / "out"
        out.mkdir()
        job = write_job(tmp_path, args=["--out", str(out), "--linger", "1"], timeouts={"rendezvous": 60})
        r = kit("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-iface",
                cwd=workdir(ssh_hosts), timeout=180)
    finally:
        n2.run(["sh", "-c", "umount /etc/hosts; ip link del kit0"], check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    got = reports(out)
    assert [(g["rank"], g["dist_world"], g["allreduce_sum"]) for g in got] == [(0, 2, 3.0), (1, 2, 3.0)]
    assert [g["gloo_ifname"] for g in got] == ["eth0", "eth0"]
    assert leftovers(ssh_hosts, "ssh-iface") == {}
