"""The facts issues 19 and 30 ask for, measured by tools/import_graph.py on kit's source: no import cycle, no import
from a lower layer to a higher one, no backend name compared outside launcher/backends/, no private name used across
modules, no module outside a backend's subpackage importing from it, nothing but cli.py importing the CLI's commands
(and the two faces, api.py and commands/, not importing each other), and a new backend touching no file of kit
outside its own subpackage (its entry point is a line of pyproject.toml; a backend in a package of its own is shown
for real in tests/backends/test_plugin_backend.py)."""

import os
import subprocess
import sys

from tests.launcher.localrun import REPO


def test_the_import_graph_facts_hold():
    r = subprocess.run([sys.executable, os.path.join(REPO, "tools", "import_graph.py")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout
    summary = r.stdout.strip().splitlines()[-1]
    for fact in ("import cycles 0", "upward imports 0", "backend-name comparisons outside backends/ 0",
                 "private names across modules 0", "imports into a backend from outside it 0",
                 "imports of the CLI outside cli.py or between the faces 0",
                 "files a new backend touches outside its subpackage 0"):
        assert fact in summary, summary

