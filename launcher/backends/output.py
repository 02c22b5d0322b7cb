"""Stream node output to the terminal with [node/rank] prefixes and to per-node log files."""

import threading

from launcher.plan.tags import is_tagged, node_tag


class PrefixedOutput:
    def __init__(self, out):
        self._out = out
        self._lock = threading.Lock()

    def pump(self, stream, rank: int, log_path: str) -> threading.Thread:
        thread = threading.Thread(target=self._copy, args=(stream, rank, log_path), daemon=True)
        thread.start()
        return thread

    def _copy(self, stream, rank: int, log_path: str) -> None:
        with open(log_path, "ab", buffering=0) as log:
            for raw in iter(stream.readline, b""):
                log.write(raw)
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                # torchrun already tags worker lines as [nodeN/rankR]; tag the launcher's own lines.
                if not is_tagged(line, rank):
                    line = f"{node_tag(rank)} {line}"
                with self._lock:
                    self._out.write(line + "\n")
                    self._out.flush()
        stream.close()
