"""`kit hosts [--clear HOST] [--json]`: the hosts of your runs, the failures each caused (with run ids and dates),
and which ones kit places runs away from (insight/health.py)."""

import json
import time

from launcher.errors import KitError


def _when(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def hosts(args) -> int:
    from launcher.insight.health import clear, cleared, ledger, suspect
    book, forgiven = ledger(), cleared()
    if args.clear:
        if args.clear not in book:
            known = ", ".join(sorted(book)) or "none yet"
            raise KitError(f"--clear {args.clear}: no run of yours used a host of that name (hosts: {known})")
        clear(args.clear)
        print(f"kit: host {args.clear} forgiven: the failures it caused up to now no longer count; runs are placed "
              f"on it again")
        return 0
    rows = []
    for name in sorted(book):
        h = book[name]
        found = suspect(h, forgiven.get(name))
        rows.append({"host": name, "backend": h.backend, "runs": len(h.runs), "avoided": found is not None,
                     "why": found.why if found else "", "cleared_at": forgiven.get(name),
                     "failures": [{"run_id": f.run_id, "attempt": f.attempt, "at": f.at, "cause": f.cause}
                                  for f in h.failures]})
    if args.json:
        print(json.dumps({"hosts": rows}, indent=2))
        return 0
    if not rows:
        print("no hosts yet: the hosts of your SSH and SLURM runs are listed here once they ran")
        return 0
    width = max(4, *(len(r["host"]) for r in rows))
    print(f"{'HOST':<{width}}  {'BACKEND':<7}  {'RUNS':>4}  {'FAILURES':>8}  STATE")
    for r in rows:
        state = (f"avoided: {r['why']}, one of its last 2 runs (kit hosts --clear {r['host']} forgives it)"
                 if r["avoided"] else "ok")
        print(f"{r['host']:<{width}}  {r['backend']:<7}  {r['runs']:>4}  {len(r['failures']):>8}  {state}")
        for f in r["failures"]:
            forgiven = " (forgiven)" if r["cleared_at"] and f["at"] <= r["cleared_at"] else ""
            print(f"  {_when(f['at'])}  run {f['run_id']} attempt {f['attempt']}: {f['cause']}{forgiven}")
    return 0


def add_args(sub) -> None:
    p = sub.add_parser("hosts", help="the hosts of your runs, the failures each caused, which ones runs avoid")
    p.add_argument("--clear", metavar="HOST", help="forgive HOST: the failures it caused so far no longer count")
    p.add_argument("--json", action="store_true", help="the same as data")


__all__ = ["hosts", "add_args"]
