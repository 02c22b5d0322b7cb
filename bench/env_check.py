"""What the environment check (job `env_check`) adds to a 2-host SSH submit: `kit submit` to both nodes' commands
running, with `env_check: strict` against `off`, alternating, on 2 namespace hosts with real sshd (tests/harness).

The job is the training module (`-m train`, so the check hashes its package, 25 files) whose nodes stop at their
first setup line in the real run (as in bench/ssh_fanout.py): what is timed is kit's start-up, logins, checks
and start. Prints each pair, the medians, their difference and kit's preflight phase from the run records.
Target: the check adds under 1 s (it rides the checks' one Python start per host); exit 1 when missed.

    .venv/bin/python bench/env_check.py [--repeats 7]
"""

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.harness.configs import ssh_cluster_config  # noqa: E402
from tests.harness.session import harness  # noqa: E402
from ssh_fanout import STAMP, wait_stamps  # noqa: E402  (bench/ is on sys.path: run as a script)

TARGET_S = 1.0
def time_submit(h, base: Path, mode: str, attempt: int) -> tuple[float, float]:
    """(seconds from `kit submit` to both nodes running, kit's preflight phase) with env_check `mode`."""
    stamps = base / f"stamps-{mode}-{attempt}"
    stamps.mkdir()
    run_id = f"envcheck-{mode}-{attempt}"
    job = base / f"job-{mode}.yaml"
    job.write_text(json.dumps({"name": "envcheck", "entrypoint": {"module": "train"}, "nodes": 2,
                               "procs_per_node": 1, "env_check": mode}))
    setup = [f'if [ -n "$KIT_RUN_ID" ]; then {STAMP.format(dir=stamps)}; exit 0; fi']
    cfg = ssh_cluster_config(h.ssh, base / "cluster.yaml", python=sys.executable, setup=setup)
    started = time.time()
    proc = subprocess.run([sys.executable, "-m", "launcher", "submit", str(job), "--cluster", cfg, "--run-id",
                           run_id], cwd=h.bed.path("work"), capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    took = wait_stamps(stamps, 2) - started
    status = json.loads(Path(h.bed.path("work"), "runs", run_id, "status.json").read_text())
    timings = (status.get("handle") or {}).get("timings") or {}   # the SSH backend's handle keeps them
    return took, timings.get("preflight_s", float("nan"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    compileall.compile_dir(str(REPO / "launcher"), quiet=1)
    runs = {"off": [], "strict": []}
    with harness(2, ssh=True) as h:
        base = Path(h.bed.path("bench"))
        base.mkdir()
        os.environ["KIT_HOME"] = str(base / "kit-home")   # its runs stay out of your own index of runs
        time_submit(h, base, "off", -1)   # warm-up: page cache, byte-compiled modules on the hosts' side
        for attempt in range(args.repeats):
            order = ("off", "strict") if attempt % 2 == 0 else ("strict", "off")
            for mode in order:
                runs[mode].append(time_submit(h, base, mode, attempt))
            print(f"pair {attempt + 1}: off {runs['off'][-1][0]:.3f} s, strict {runs['strict'][-1][0]:.3f} s",
                  flush=True)
    med = {m: statistics.median(t for t, _ in r) for m, r in runs.items()}
    pre = {m: statistics.median(p for _, p in r) for m, r in runs.items()}
    added = med["strict"] - med["off"]
    print(f"submit to both nodes running, medians: off {med['off']:.3f} s, strict {med['strict']:.3f} s; "
          f"the check adds {added:+.3f} s (ratio {med['strict'] / med['off']:.3f})")
    print(f"kit's preflight phase, medians: off {pre['off']:.3f} s, strict {pre['strict']:.3f} s "
          f"({pre['strict'] - pre['off']:+.3f} s)")
    print(f"target: adds under {TARGET_S:g} s: {'met' if added < TARGET_S else 'MISSED'}")
    return 0 if added < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
