"""The boot that turns a host's checks into its watchdog preloads what the watchdog imports while it waits."""

import ast

from launcher.backends.ssh_boot import WATCHDOG_IMPORTS
from launcher.supervise import local_node


def test_preloaded_modules_are_the_watchdogs_imports():
    tree = ast.parse(open(local_node.WATCHDOG).read())
    imported = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert set(WATCHDOG_IMPORTS) == imported
