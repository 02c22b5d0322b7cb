"""A test cluster on one machine (root, Debian packages from .ci/run): namespace hosts with real sshd and a real
SLURM cluster, for the SSH and SLURM backend tests. No mocks.

Pytest fixtures (session-scoped, registered for all tests by tests/conftest.py; see fixtures.py):
    testbed, ssh_hosts, slurm_cluster; ssh_own_disks (per test)
For scripts (benchmarks): `with session.harness(n_hosts, ssh=True, slurm=False) as h: ...`

Pieces, one job per module: slots (subnet, names, ports, lock), network (bridge, veths, guard route), hosts (one
host's namespaces and init, run/popen/processes), testbed (N hosts), ssh, munge, mariadb, slurm_conf, slurm,
configs (kit cluster YAML), disks (a tmpfs of one host's own: workdirs and caches that no other host
sees), leaks (what is left), preflight (skip locally, fail in CI).
"""
