# The test cluster fixtures (testbed, ssh_hosts, slurm_cluster) for every test directory; each starts only when
# a test asks for it (tests/harness/fixtures.py).
pytest_plugins = ["tests.harness.fixtures"]


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/* from the current renderers instead of comparing against them")
