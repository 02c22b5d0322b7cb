import os

import pytest

# The test cluster fixtures (testbed, ssh_hosts, slurm_cluster) for every test directory; each starts only when
# a test asks for it (tests/harness/fixtures.py).
pytest_plugins = ["tests.harness.fixtures"]
HARNESS_FIXTURES = {"testbed", "ssh_hosts", "slurm_cluster"}


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/* from the current renderers instead of comparing against them")


def pytest_configure(config):
    # A test suite started in the background by a non-interactive shell (`bash .ci/run &`, nohup) inherits SIGINT
    # ignored, and so would every kit it starts: the Ctrl-C tests would test nothing. Caught here, SIGINT is reset
    # to its default in the processes the tests start (as from a terminal).
    import signal
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # kit indexes every run it starts under $KIT_HOME (default ~/.kit): the tests' runs go to a directory of the
    # session's own, never into the user's index. Subprocesses (kit, the harness's hosts) inherit it.
    import tempfile
    if not os.environ.get("KIT_TEST_KEEP_HOME"):
        os.environ["KIT_HOME"] = tempfile.mkdtemp(prefix="kit-home-")


def pytest_collection_modifyitems(config, items):
    """Every test that uses the test cluster is marked `harness`, whatever file it is in: `make test-fast` leaves
    them out with -m 'not harness' (and the long training runs, marked `slow`)."""
    for item in items:
        if HARNESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.harness)


@pytest.fixture(autouse=True)
def _own_kit_index(tmp_path_factory, monkeypatch):
    """Each test its own index of runs: a run id names one run in kit's index whatever its run root (launch.py),
    and tests in different directories reuse short ids (`r`, `r1`)."""
    if not os.environ.get("KIT_TEST_KEEP_HOME"):
        monkeypatch.setenv("KIT_HOME", str(tmp_path_factory.mktemp("kit-home")))


@pytest.fixture(autouse=True)
def _kit_console():
    """kit's lines on stderr as the CLI shows them (launcher/logs.py): tests that call the core directly read them
    from capsys / capfd as they read `kit submit`'s stderr. A test of the Python API's own silence removes it."""
    import logging
    from launcher.logs import ROOT, setup_console
    setup_console(logging.INFO)
    yield
    logger = logging.getLogger(ROOT)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)
