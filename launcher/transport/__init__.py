"""How commands and files reach a host. `ssh.connect_all(targets, options)` opens one paramiko connection per
host, in parallel, with host keys checked; a `Connection` then runs commands, uploads files and opens the long
watched session a node runs in. paramiko is imported only here (through `load_paramiko()`), and only when a remote
backend needs it."""

import sys
import threading

_importing = threading.Lock()   # hosts connect from many threads at once


class _InvokeOnUse:
    """Stands in for the `invoke` module in paramiko.config and imports it when first used."""

    def __getattr__(self, name):
        import invoke
        return getattr(invoke, name)


class _VersionOnly:
    """Stands in for importlib.metadata while paramiko imports: its one use there is
    `metadata.version("paramiko")`, read here from the name of paramiko's .dist-info directory. The real
    importlib.metadata (20 ms to import) is left for later, when kit's schemas load it anyway. Anything else
    asked of it is the real module's."""

    def version(self, name: str) -> str:
        import importlib.util
        import os
        spec = importlib.util.find_spec(name)
        for place in (spec.submodule_search_locations or []) if spec else []:
            site = os.path.dirname(place)
            for entry in os.listdir(site):
                if entry.startswith(name + "-") and entry.endswith(".dist-info"):
                    return entry[len(name) + 1:-len(".dist-info")]
        return self._real().version(name)

    def __getattr__(self, attr):
        if attr.startswith("__"):   # the import system's own questions (__spec__, ...): this is no module
            raise AttributeError(attr)
        return getattr(self._real(), attr)

    def _real(self):
        if sys.modules.get("importlib.metadata") is self:
            del sys.modules["importlib.metadata"]
        import importlib.metadata
        return importlib.metadata


def load_paramiko():
    """The paramiko module. paramiko.config imports `invoke` at once, only to run an ssh_config `Match exec`
    line; that import costs about 0.13 s of CPU (it pulls in asyncio and unittest.mock) at every kit start that
    touches SSH. So paramiko is imported with `invoke` hidden, and its config module gets a stand-in that
    imports `invoke` on first use: `Match exec` still works. It is imported while kit's early logins wait for
    it (backends/ssh_early.py), so importlib.metadata, which it needs for its version string only, is not
    imported on that way either (_VersionOnly)."""
    with _importing:
        if "paramiko" not in sys.modules and "invoke" not in sys.modules:
            sys.modules["invoke"] = None   # `import invoke` raises ImportError; paramiko.config records it
            stand_in = _VersionOnly() if "importlib.metadata" not in sys.modules else None
            if stand_in is not None:
                sys.modules["importlib.metadata"] = stand_in
            try:
                import paramiko.config
            finally:
                del sys.modules["invoke"]
                if stand_in is not None and sys.modules.get("importlib.metadata") is stand_in:
                    del sys.modules["importlib.metadata"]
            if getattr(paramiko.config, "invoke", False) is None:
                paramiko.config.invoke = _InvokeOnUse()
        import paramiko
    return paramiko
