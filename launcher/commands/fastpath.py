"""`kit submit`'s start-up fast path, behind one door: for a real run on a cluster whose backend has a warm-up
(backends/warmup.py; SSH logs in to the hosts), kit warms up while a forked planner (planner.py) loads the specs
and builds the plan. Everything else takes the ordinary path in submit.py. Either way the launch gets the same
Prepared.

    with FastStart(request, dry_run) as fast:
        prepared = fast.prepared()      # None: not taken (a dry-run, a sweep, no warm-up for the backend)
        ...
        launch(prepared, ..., on_checked=fast.checked)
"""


def _warm_up(request):
    """The cluster's backend's WarmUp when it wants this submission, else None. The cluster file is read as plain
    YAML (kit's process never loads the schemas on this path); anything it does not understand is left to the
    ordinary load, which says what is wrong."""
    from launcher.backends import registry
    from launcher.backends.warmup import read_yaml

    try:
        cluster = read_yaml(request.cluster)
        warm = registry.warm_up(cluster.get("backend"))
        return warm if warm is not None and warm.wants(request, cluster) else None
    except Exception:
        return None


class FastStart:
    def __init__(self, request, dry_run: bool = False):
        self.request, self.dry_run = request, dry_run
        self.planner = self.warm = None

    def __enter__(self) -> "FastStart":
        if not self.dry_run and self.request.cluster:
            self.warm = _warm_up(self.request)
        if self.warm is not None:
            from launcher.commands.planner import Planner

            self.planner = Planner(self.request)  # forked first: before the warm-up's threads
            self.warm.start()
        return self

    def prepared(self):
        """The planner's Prepared (its KitError raised here), or None when the fast path was not taken or the
        submission is a sweep after all (the warm-up is closed then)."""
        prepared = None
        if self.planner is not None:
            self.warm.meanwhile()
            prepared = self.planner.result()
        if prepared is None and self.warm is not None:
            self.warm.close()
        return prepared

    def checked(self) -> None:
        """The hosts passed their checks: the planner ended after its answer; reap it now, not for the run's
        length."""
        if self.planner is not None:
            self.planner.close()

    def __exit__(self, *exc) -> None:
        if self.planner is not None:
            self.planner.close()
        if self.warm is not None:
            self.warm.close()  # the planner refused the specs, or kit was interrupted: what it began ends
