"""The echo backend's warm-up: it says when kit warms it up while planning a real run."""

import sys

from launcher.backends.warmup import WarmUp


class EchoWarmUp(WarmUp):
    def wants(self, request, cluster: dict) -> bool:
        return True

    def start(self) -> None:
        print("echo: warming up", file=sys.stderr, flush=True)


WARM_UP = EchoWarmUp
