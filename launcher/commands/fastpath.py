"""`kit submit`'s start-up fast path, behind one door: for an SSH run, kit logs in to the hosts
(backends/ssh/early.py) while a forked planner (planner.py) loads the specs and builds the plan. Everything else
takes the ordinary path in submit.py. Either way the launch gets the same Prepared.

    with FastStart(args) as fast:
        prepared = fast.prepared()      # None: not taken (a dry-run, a sweep, not an SSH cluster)
        ...
        launch(prepared, ..., on_checked=fast.checked)
"""

from launcher.backends.ssh.early import close_early, early_guess, log_in_early


class FastStart:
    def __init__(self, args):
        self.args = args
        self.planner = None

    def __enter__(self) -> "FastStart":
        guess = early_guess(self.args)
        if guess is not None:
            from launcher.commands.planner import Planner
            self.planner = Planner(self.args)   # forked first: before the logins' threads, and their paramiko
        log_in_early(guess)
        return self

    def prepared(self):
        """The planner's Prepared (its KitError raised here), or None when the fast path was not taken or the
        submission is a sweep after all (the early logins are closed then)."""
        prepared = None
        if self.planner is not None:
            from launcher.backends.ssh.backend import load_ahead
            load_ahead()   # the backend loads while the planner works
            prepared = self.planner.result()
        if prepared is None:
            close_early()
        return prepared

    def checked(self) -> None:
        """The hosts passed their checks: the planner ended after its answer; reap it now, not for the run's
        length."""
        if self.planner is not None:
            self.planner.close()

    def __exit__(self, *exc) -> None:
        if self.planner is not None:
            self.planner.close()
        close_early()   # the planner refused the specs, or kit was interrupted: logins end as they should
