"""The echo backend's delivery: the local backend's."""

from launcher.backends.local.backend import LocalBackend


class EchoBackend(LocalBackend):
    name = "echo"


BACKEND = EchoBackend
