"""`kit doctor --cluster C [--job J | -m MODULE]`: can this cluster run jobs? One verdict per check and host; exit 1
on any FAIL. What is checked is the cluster's backend's (core/hosts.py)."""

import json
import sys


def doctor(args) -> int:
    from launcher.core.hosts import doctor_rows
    from launcher.core.request import Request

    if args.job and args.module:
        from launcher.errors import KitError

        raise KitError(f"give --job {args.job} or -m {args.module}, not both")
    request = Request(job=args.job, module=args.module) if args.job or args.module else None
    name, rows = doctor_rows(args.cluster, request)
    failed = any(r[2] == "FAIL" for r in rows)
    if args.format == "json":
        data = [dict(zip(("host", "check", "verdict", "detail"), r)) for r in rows]
        sys.stdout.write(json.dumps({"cluster": name, "ok": not failed, "checks": data}, indent=2) + "\n")
    else:
        _table(rows)
        _drift_table(rows)
        print(f"kit doctor: {name}: " + ("some checks FAILED" if failed else "every check passed"))
    return 1 if failed else 0


def _table(rows) -> None:
    widths = [max(len(str(r[i])) for r in rows + [("HOST", "CHECK", "VERDICT", "")]) for i in range(3)]
    print(f"{'HOST':<{widths[0]}}  {'CHECK':<{widths[1]}}  {'VERDICT':<{widths[2]}}  DETAIL")
    for host, check, verdict, detail in rows:
        print(f"{host:<{widths[0]}}  {check:<{widths[1]}}  {verdict:<{widths[2]}}  {detail}")


def _drift_table(rows) -> None:
    """The rows of items that differ between hosts (`env ITEM`), as the table `kit submit` says (item x host)."""
    cells = [(host, check[4:], detail) for host, check, verdict, detail in rows if check.startswith("env ")]
    if not cells:
        return
    from launcher.insight.drift import table

    hosts, items = list(dict.fromkeys(c[0] for c in cells)), list(dict.fromkeys(c[1] for c in cells))
    value = {(h, i): v for h, i, v in cells}
    reports = [(h, {i: value.get((h, i)) for i in items}) for h in hosts]
    print("the hosts' environments differ (a run with env_check: strict stops before training):")
    for line in table(reports, [(i, [value.get((h, i)) for h in hosts]) for i in items]):
        print("  " + line)
