"""The importlib.metadata stand-in (launcher/metadata_on_use.py): versions without the real module, anything
else from it, and nothing left behind."""

import subprocess
import sys

from launcher.metadata_on_use import MetadataOnUse
from tests.launcher.localrun import REPO


def test_the_stand_in_answers_anything_else_with_the_real_module():
    # Should a library ask importlib.metadata for more than a version while importing, it gets it.
    import importlib.metadata
    stand_in = MetadataOnUse()
    assert stand_in.version("paramiko") == importlib.metadata.version("paramiko")
    assert stand_in.version("pydantic") == importlib.metadata.version("pydantic")
    assert stand_in.distribution("paramiko").metadata["Name"].lower() == "paramiko"
    assert [e.name for e in stand_in.entry_points(group="console_scripts")] == \
        [e.name for e in importlib.metadata.entry_points(group="console_scripts")]


BLOCK = """
import sys
from launcher.metadata_on_use import metadata_on_use
with metadata_on_use():
    import importlib.metadata as inside
    print("inside:", type(inside).__name__, inside.version("paramiko") != "")
print("after:", "importlib.metadata" in sys.modules)
import importlib.metadata
print("real after:", type(importlib.metadata).__name__, hasattr(importlib.metadata, "distributions"))
"""


def test_the_stand_in_is_gone_after_the_block():
    r = subprocess.run([sys.executable, "-c", BLOCK], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["inside: MetadataOnUse True", "after: False", "real after: module True"]
