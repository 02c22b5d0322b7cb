"""kit's Python API under its own name: `import kit`, then kit.submit(...), kit.plan(...), kit.runs(), ...

The code lives in the `launcher` package; every name here is launcher's own object (kit.submit is
launcher.api.submit), loaded on first use like launcher's, so importing kit imports no torch.
"""

import launcher
from launcher import KitError, RecordError, SchedulerError, __version__  # noqa: F401  (kit.__version__)
from kit.metrics import report_metric  # noqa: F401  (standard library only: a trial's learning curve)

_API = launcher._API


def __getattr__(name):
    if name in _API:
        return getattr(launcher, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])


__all__ = ["KitError", "RecordError", "SchedulerError", "report_metric", *_API]
