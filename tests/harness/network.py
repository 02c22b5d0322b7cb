"""The test network: a bridge in its own namespace, one veth to the root namespace, one netns per host.

    root ns  kith<slot> 10.200.<slot>.1/24 ──veth── uplink [bridge ns: br0] ──veth── eth0 10.200.<slot>.(10+i) in host i

The hosts get no default route: they reach each other and the root namespace, nothing else. An `unreachable`
route for the subnet in the root namespace keeps test traffic from leaking to the default gateway if the link
disappears (its connected route then goes away; the guard stays until teardown).
"""

from tests.harness.shell import sh
from tests.harness.slots import netns_names

GUARD_METRIC = "4242"


def create_bridge(slot):
    br = slot.bridge_netns
    sh(["ip", "netns", "add", br])
    _batch(br, ["link add br0 type bridge", "link set br0 up", "link set lo up"])
    sh(["ip", "link", "add", slot.root_link, "type", "veth", "peer", "name", "uplink", "netns", br])
    _batch(br, ["link set uplink master br0", "link set uplink up"])
    sh(["ip", "addr", "add", f"{slot.gateway}/24", "dev", slot.root_link])
    sh(["ip", "link", "set", slot.root_link, "up"])
    sh(["ip", "route", "add", "unreachable", slot.subnet, "metric", GUARD_METRIC])


def create_host_netns(slot, i):
    """Host i's network namespace with eth0 on the bridge and loopback up; returns its name."""
    ns = slot.host_netns(i)
    sh(["ip", "netns", "add", ns])
    sh(["ip", "-n", slot.bridge_netns, "link", "add", f"h{i}", "type", "veth", "peer", "name", "eth0", "netns", ns])
    _batch(slot.bridge_netns, [f"link set h{i} master br0", f"link set h{i} up"])
    _batch(ns, ["link set lo up", f"addr add {slot.host_address(i)}/24 dev eth0", "link set eth0 up"])
    return ns


def pin_neighbours(slot, n_hosts):
    """Permanent ARP entries: every host knows every other host's and the root link's MAC address, and the root
    namespace knows each host's. With 32 hosts each importing torch on 2 cores (load 40-50), ARP answers came too
    late: gloo's full mesh failed with "No route to host" between two hosts. Entries pinned here survive a
    `neigh flush`; a host whose eth0 goes down loses its own and resolves by ARP again once up."""
    macs = {slot.gateway: _mac(None, slot.root_link)}
    for i in range(1, n_hosts + 1):
        macs[slot.host_address(i)] = _mac(slot.host_netns(i), "eth0")
    for i in range(1, n_hosts + 1):
        _batch(slot.host_netns(i), [f"neigh replace {addr} lladdr {mac} dev eth0 nud permanent"
                                    for addr, mac in macs.items() if addr != slot.host_address(i)])
    sh(["ip", "-batch", "-"], input="".join(f"neigh replace {addr} lladdr {mac} dev {slot.root_link} nud permanent\n"
                                            for addr, mac in macs.items() if addr != slot.gateway))


def _mac(ns, dev):
    import json
    return json.loads(sh(["ip", *(["-n", ns] if ns else []), "-j", "link", "show", dev]))[0]["address"]


def destroy_network(slot):
    """Delete every namespace of the slot (their veths go with them), then the guard route."""
    for ns in netns_names(slot.prefix):
        sh(["ip", "netns", "del", ns])
    sh(["ip", "link", "del", slot.root_link], check=False)  # already gone with the bridge namespace
    sh(["ip", "route", "del", "unreachable", slot.subnet, "metric", GUARD_METRIC], check=False)


def _batch(ns, commands):
    """Several `ip` commands in one process inside namespace ns (one fork instead of one per line)."""
    sh(["ip", "-n", ns, "-batch", "-"], input="\n".join(commands) + "\n")


def wait_reachable(address: str, port: int = 22, timeout: float = 30.0) -> None:
    """After a test took a host's link down and up again: wait (bounded) until its sshd answers from here, so the
    next test does not meet the neighbour entry the outage left failed ("No route to host", seen once in CI right
    after the host-loss tests)."""
    import socket
    import time

    sh(["ip", "neigh", "flush", "to", address], check=False)
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
