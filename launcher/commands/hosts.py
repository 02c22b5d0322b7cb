"""`kit hosts [--clear HOST] [--json]`: the hosts of your runs, the failures each caused (with run ids and dates),
and which ones kit places runs away from (core/hosts.py)."""

import json
import time


def _when(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def hosts(args) -> int:
    from launcher.core.hosts import clear_host, host_rows

    if args.clear:
        print(clear_host(args.clear))
        return 0
    rows = host_rows()
    if args.json:
        print(json.dumps({"hosts": rows}, indent=2))
        return 0
    if not rows:
        print("no hosts yet: the hosts of your SSH and SLURM runs are listed here once they ran")
        return 0
    width = max(4, *(len(r["host"]) for r in rows))
    print(f"{'HOST':<{width}}  {'BACKEND':<7}  {'RUNS':>4}  {'FAILURES':>8}  STATE")
    for r in rows:
        state = (
            f"avoided: {r['why']}, one of its last 2 runs (kit hosts --clear {r['host']} forgives it)"
            if r["avoided"]
            else "ok"
        )
        print(f"{r['host']:<{width}}  {r['backend']:<7}  {r['runs']:>4}  {len(r['failures']):>8}  {state}")
        for f in r["failures"]:
            forgiven = " (forgiven)" if r["cleared_at"] and f["at"] <= r["cleared_at"] else ""
            print(f"  {_when(f['at'])}  run {f['run_id']} attempt {f['attempt']}: {f['cause']}{forgiven}")
    return 0


def add_args(sub):
    p = sub.add_parser("hosts", help="the hosts of your runs, the failures each caused, which ones runs avoid")
    p.add_argument("--clear", metavar="HOST", help="forgive HOST: the failures it caused so far no longer count")
    p.add_argument("--json", action="store_true", help="the same as data")
    return p


__all__ = ["hosts", "add_args"]
