"""Which backends kit has: the `kit.backends` entry points of the installed distributions, kit's own three
included (pyproject.toml), so that a backend can ship as a package of its own. An entry point names a package:

    [project.entry-points."kit.backends"]
    mine = "my_kit_backend"

holding the backend's parts, each a module loaded only when asked for:

* `placement` (required): PLACEMENT, a `Placement` (planning/placement.py), pure and light: how the planner places
  the job's nodes, the cluster config's sections the backend owns, what the dry-run adds. Loaded while planning.
  Optionally HANDLE, the `Handle` class (backends/handle.py) of the facts the backend keeps in a run's record (what
  its placement binds); none: the record keeps none. Loaded too when a record is read.
* `backend` (required): BACKEND, a `Backend` class (backends/base.py): checks, delivery, state, cancel, logs,
  doctor rows. Loaded only for a real run or a record's state.
* `warmup` (optional): WARM_UP, a `WarmUp` class (backends/warmup.py): work begun while kit plans a real run.
* the package itself: HELP, the phrase the CLI's help says of it, and DOCTOR, what `kit doctor` checks on such a
  cluster (None: kit doctor has nothing to check there).

Nothing else in kit names a backend. The entry points are read from the distributions' metadata files on
sys.path directly (entry_points.txt), not through importlib.metadata, whose import alone costs more than kit's
start-up may (metadata_on_use.py). This module imports nothing of kit's but its errors, so every layer may ask it."""

import importlib
import os
import sys

from launcher.errors import KitError

GROUP = "kit.backends"
# The cluster kit uses when no --cluster is given, and what a record without a backend field ran on.
DEFAULT = "local"

_found: dict | None = None  # name -> package, read once per process
_parts: dict = {}


def _entry_points(text: str, group: str) -> dict:
    """name -> value of `group`'s lines in an entry_points.txt (an INI file: `[group]`, then `name = value`)."""
    out: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == f"[{group}]"
        elif inside and "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            out.setdefault(name.strip(), value.strip())
    return out


def scan(group: str = GROUP, path: list | None = None) -> dict:
    """name -> value of every entry point in `group` of the distributions on `path` (sys.path), as
    importlib.metadata finds them: sys.path in order, one distribution of a name (the first), the first entry
    point of a name. Directories only (a zipped distribution is not read)."""
    found: dict[str, str] = {}
    seen = set()
    for entry in sys.path if path is None else path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            stem, dot, kind = name.rpartition(".")
            if kind not in ("dist-info", "egg-info") or not dot:
                continue
            dist = stem.split("-")[0].lower().replace("-", "_").replace(".", "_")
            if dist in seen:
                continue
            seen.add(dist)
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            for key, value in _entry_points(text, group).items():
                found.setdefault(key, value)
    return found


def _table() -> dict:
    global _found
    if _found is None:
        _found = scan()
    return _found


def names() -> tuple:
    return tuple(_table())


def known(name) -> bool:
    return isinstance(name, str) and name in _table()


def _package(name: str) -> str:
    if not known(name):
        from launcher.errors import KitError

        if not _table():
            raise KitError(
                f"backend {name!r}: no backends are installed (no {GROUP!r} entry points found: is kit "
                f"installed? pip install -e .)"
            )
        raise KitError(f"backend {name!r}: not one of {', '.join(_table())}")
    return _table()[name].split(":")[0].strip()


def _part(name: str, module: str, attr: str, optional: bool = False):
    """The backend's `module` part's `attr` (None for a missing optional part), loaded once per process."""
    key = (name, module, attr)
    if key not in _parts:
        target = f"{_package(name)}.{module}" if module else _package(name)
        try:
            _parts[key] = getattr(importlib.import_module(target), attr, None if optional else ...)
        except ModuleNotFoundError as e:
            if not optional or e.name != target:
                raise
            _parts[key] = None
        if _parts[key] is ...:
            raise AttributeError(f"{target} has no {attr} (a kit backend's {module or 'package'} declares it)")
    return _parts[key]


def placement(name: str):
    """The backend's Placement instance (one per process); a plug-in written to the earlier, wider contract is
    refused in one line rather than run with its overrides ignored."""
    found = _part(name, "placement", "PLACEMENT")
    old = getattr(found, "retired_overrides", ())
    if old:
        raise KitError(
            f"backend {name}: its Placement defines {', '.join(old)}, methods of kit's earlier backend contract that "
            f"kit no longer calls; port it to the ten methods of launcher/planning/placement.py (docs/internals.md)"
        )
    return found


def backend_class(name: str):
    return _part(name, "backend", "BACKEND")


def backend(name: str):
    """A new instance of the named backend."""
    return backend_class(name)()


def handle_class(name: str):
    """The backend's Handle class, or None when its records keep no facts of their own."""
    # The placement module holds it; a backend written to the earlier contract has it in a `handle` module.
    return _part(name, "placement", "HANDLE", optional=True) or _part(name, "handle", "HANDLE", optional=True)


def warm_up(name: str):
    """A new WarmUp of the named backend, or None when it has none (or is no backend kit has)."""
    cls = _part(name, "warmup", "WARM_UP", optional=True) if known(name) else None
    return None if cls is None else cls()


def help_text(name: str) -> str:
    """What the CLI's help says of the backend (a phrase)."""
    return _part(name, "", "HELP", optional=True) or name


def doctor_text(name: str) -> str | None:
    """What `kit doctor` checks on a cluster of this backend, or None when it checks nothing there."""
    return _part(name, "", "DOCTOR", optional=True)
