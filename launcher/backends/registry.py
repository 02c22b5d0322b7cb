"""Which backends kit has: a name -> package table, loaded lazily. Adding a backend is one line here and one
subpackage of launcher/backends/ with two modules:

* `placement`: a `Placement` (planning/placement.py), pure and light: how the planner places the job's nodes, what the
  cluster config may hold for it, what the dry-run adds. Loaded while planning (`kit submit --dry-run`).
* `backend`: a `Backend` (backends/base.py): checks, delivery, state, cancel, logs. Loaded only for a real run or
  a record's state.

Nothing else in kit names a backend: what differs between them is a method or property of one of those two.
This module imports nothing of kit's, so every layer may ask it."""

import importlib

BACKENDS = {
    "local": "launcher.backends.local",
    "ssh": "launcher.backends.ssh",
    "slurm": "launcher.backends.slurm",
}
# The cluster kit uses when no --cluster is given, and what a record without a backend field ran on.
DEFAULT = "local"

_placements: dict = {}


def names() -> tuple:
    return tuple(BACKENDS)


def known(name) -> bool:
    return isinstance(name, str) and name in BACKENDS


def _package(name: str) -> str:
    if not known(name):
        from launcher.errors import KitError
        raise KitError(f"backend {name!r}: not one of {', '.join(BACKENDS)}")
    return BACKENDS[name]


def placement(name: str):
    """The backend's Placement instance (one per process)."""
    if name not in _placements:
        module = importlib.import_module(_package(name) + ".placement")
        _placements[name] = module.PLACEMENT
    return _placements[name]


def backend_class(name: str):
    return importlib.import_module(_package(name) + ".backend").BACKEND


def backend(name: str):
    """A new instance of the named backend."""
    return backend_class(name)()
