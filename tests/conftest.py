import os

import pytest

# The test cluster fixtures (testbed, ssh_hosts, slurm_cluster) for every test directory; each starts only when
# a test asks for it (tests/harness/fixtures.py).
pytest_plugins = ["tests.harness.fixtures"]


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/* from the current renderers instead of comparing against them")


def pytest_configure(config):
    # kit indexes every run it starts under $KIT_HOME (default ~/.kit): the tests' runs go to a directory of the
    # session's own, never into the user's index. Subprocesses (kit, the harness's hosts) inherit it.
    import tempfile
    if not os.environ.get("KIT_TEST_KEEP_HOME"):
        os.environ["KIT_HOME"] = tempfile.mkdtemp(prefix="kit-home-")


@pytest.fixture(autouse=True)
def _own_kit_index(tmp_path_factory, monkeypatch):
    """Each test its own index of runs: a run id names one run in kit's index whatever its run root (launch.py),
    and tests in different directories reuse short ids (`r`, `r1`)."""
    if not os.environ.get("KIT_TEST_KEEP_HOME"):
        monkeypatch.setenv("KIT_HOME", str(tmp_path_factory.mktemp("kit-home")))
