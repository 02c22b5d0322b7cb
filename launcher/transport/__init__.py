"""How commands and files reach a host. `connect.connect_all(targets, options)` opens one paramiko connection per
host, in parallel, with host keys checked; a `Connection` then runs commands, uploads files and opens the long
watched session a node runs in. paramiko is imported only here (through `load_paramiko()`), and only when a remote
backend needs it."""

import sys
import threading

from launcher.metadata_on_use import metadata_on_use

_importing = threading.Lock()  # hosts connect from many threads at once


class _InvokeOnUse:
    """Stands in for the `invoke` module in paramiko.config and imports it when first used."""

    def __getattr__(self, name):
        import invoke

        return getattr(invoke, name)


def load_paramiko():
    """The paramiko module. paramiko.config imports `invoke` at once, only to run an ssh_config `Match exec`
    line; that import costs about 0.13 s of CPU (it pulls in asyncio and unittest.mock) at every kit start that
    touches SSH. So paramiko is imported with `invoke` hidden, and its config module gets a stand-in that
    imports `invoke` on first use: `Match exec` still works. It is imported while kit's early logins wait for
    it (backends/ssh/early.py), so importlib.metadata, which it needs for its version string only, is not
    imported on that way either (metadata_on_use.py)."""
    with _importing:
        if "paramiko" not in sys.modules and "invoke" not in sys.modules:
            sys.modules["invoke"] = None  # `import invoke` raises ImportError; paramiko.config records it
            try:
                with metadata_on_use():
                    import paramiko.config
            finally:
                del sys.modules["invoke"]
            if getattr(paramiko.config, "invoke", False) is None:
                paramiko.config.invoke = _InvokeOnUse()
            _quiet_paramiko()
        import paramiko
    return paramiko


def _quiet_paramiko() -> None:
    """paramiko logs a transport thread's failure (a host that drops the connection during the banner) with a
    traceback; with no handler configured, Python's last-resort handler prints it on stderr, above kit's own one
    line about that host. kit says what went wrong itself: paramiko's log goes nowhere unless the program using
    kit configured logging for it."""
    import logging

    log = logging.getLogger("paramiko")
    if not log.handlers:
        log.addHandler(logging.NullHandler())
        log.propagate = False
