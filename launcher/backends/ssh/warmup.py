"""The SSH backend's warm-up: the hosts logged in to while kit plans (early.py), the backend's modules loaded."""

from launcher.backends.ssh.early import close_early, early_guess, log_in_early
from launcher.backends.warmup import WarmUp


class SshWarmUp(WarmUp):
    def __init__(self):
        self.guess = None

    def wants(self, request, cluster: dict) -> bool:
        self.guess = early_guess(request, cluster)
        return self.guess is not None

    def start(self) -> None:
        log_in_early(self.guess)

    def meanwhile(self) -> None:
        from launcher.backends.ssh.backend import load_ahead

        load_ahead()  # the backend loads while the planner works

    def close(self) -> None:
        close_early()


WARM_UP = SshWarmUp
