"""kit: turn a job spec and a cluster config into a launch plan, then deliver it.

From Python (launcher/api.py; loaded on first use, so `kit --help` stays fast):

    import kit          # the `launcher` package under its own name (kit/__init__.py)
    run = kit.submit("jobs/bert_cls.yaml", nodes=2)     # returns at once; the run goes on
    run.wait(); run.state; run.failure; run.logs(); run.cancel()
    kit.plan(...); kit.get_run(run_id); kit.runs(); kit.sweep(job, sweep="other_sweep.yaml")
    run.report()       # where its time went (kit report); kit.hosts(clear=None): host health (kit hosts)
"""

from launcher.errors import KitError, RecordError, SchedulerError

__version__ = "0.1.0"

_API = ("submit", "plan", "sweep", "get_run", "get_sweep", "runs", "hosts", "Run", "Sweep", "Plan")


def __getattr__(name):
    if name in _API:
        from launcher import api

        return api.runs_under if name == "runs" else getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])


__all__ = ["KitError", "RecordError", "SchedulerError", *_API]
