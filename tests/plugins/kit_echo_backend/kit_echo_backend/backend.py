"""The echo backend's delivery: the local backend's, after saying the greeting and keeping it in the record."""

import sys

from launcher.backends.local.backend import LocalBackend


class EchoBackend(LocalBackend):
    name = "echo"

    def execute(self, plan, record, base_dir, console=None):
        greeting = self.binding["greeting"]
        print(f"echo: {greeting}", file=sys.stderr, flush=True)
        record.update_status(greeting=greeting)
        return super().execute(plan, record, base_dir, console)

    def doctor_rows(self, cluster, job, plan) -> list:
        greeting = cluster.echo.greeting if cluster.echo is not None else "hello"
        return [("this machine", "greeting", "PASS", greeting)]


BACKEND = EchoBackend
