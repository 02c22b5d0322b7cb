"""kit imports paramiko without its eager `invoke` import (launcher.transport.load_paramiko), and an ssh_config
`Match exec` line, the one thing paramiko needs invoke for, still works."""

import subprocess
import sys

from tests.launcher.localrun import REPO

CHECK = """
import sys
from launcher.transport import load_paramiko
load_paramiko()
print("invoke imported with paramiko:", "invoke" in sys.modules)
from launcher.transport.endpoint import resolve
print("hostname", resolve("box", None, {"config_file": sys.argv[1]}).hostname)
print("other", resolve("other", "10.1.2.3", {"config_file": sys.argv[1]}).hostname)
"""


def test_match_exec_still_works_with_invoke_loaded_late(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text('Match host box exec "test 1 = 1"\n  HostName matched.example\n'
                      'Match host other exec "test 1 = 2"\n  HostName never.example\n')
    r = subprocess.run([sys.executable, "-c", CHECK, str(config)], cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["invoke imported with paramiko: False", "hostname matched.example",
                                     "other 10.1.2.3"]


VERSION_CHECK = """
import sys
from launcher.transport import load_paramiko
paramiko = load_paramiko()
print("metadata imported with paramiko:", "importlib.metadata" in sys.modules)
import importlib.metadata
print("real metadata after:", hasattr(importlib.metadata, "distributions"))
print("same version:", paramiko.__version__ == importlib.metadata.version("paramiko"))
"""


def test_paramiko_version_without_importlib_metadata():
    # paramiko reads its __version__ through importlib.metadata (20 ms to import) at import time; kit gives it
    # the version from the .dist-info name and leaves the real module for later.
    r = subprocess.run([sys.executable, "-c", VERSION_CHECK], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["metadata imported with paramiko: False", "real metadata after: True",
                                     "same version: True"]
