"""importlib.metadata, imported only when really used. Importing it costs ~10-20 ms of CPU (email, zipfile,
csv, ...), and two libraries kit loads on its way to the hosts import it without needing it: paramiko for its
own version string, pydantic for a plugin search kit's planner turns off (commands/planner.py).

`with metadata_on_use(): import X` lets X import a stand-in: `version(name)` is read from the name of the
package's .dist-info directory, `entry_points` imports the real module when called (not when imported by name),
and anything else asked of it is the real module's, imported then."""

import contextlib
import sys


class MetadataOnUse:
    def version(self, name: str) -> str:
        import importlib.util
        import os

        spec = importlib.util.find_spec(name)
        for place in (spec.submodule_search_locations or []) if spec else []:
            site = os.path.dirname(place)
            for entry in os.listdir(site):
                if entry.startswith(name + "-") and entry.endswith(".dist-info"):
                    return entry[len(name) + 1 : -len(".dist-info")]
        return self._real().version(name)

    def entry_points(self, **selection):
        """Deferred to the real module at the call, not at `from importlib.metadata import entry_points`."""
        return self._real().entry_points(**selection)

    def __getattr__(self, attr):
        if attr.startswith("__"):  # the import system's own questions (__spec__, ...): this is no module
            raise AttributeError(attr)
        return getattr(self._real(), attr)

    def _real(self):
        if sys.modules.get("importlib.metadata") is self:
            del sys.modules["importlib.metadata"]
        import importlib.metadata

        return importlib.metadata


@contextlib.contextmanager
def metadata_on_use():
    """While the block imports, `import importlib.metadata` gives the stand-in, unless the real one is there."""
    stand_in = MetadataOnUse() if "importlib.metadata" not in sys.modules else None
    if stand_in is not None:
        sys.modules["importlib.metadata"] = stand_in
    try:
        yield
    finally:
        if stand_in is not None and sys.modules.get("importlib.metadata") is stand_in:
            del sys.modules["importlib.metadata"]
