"""`kit report RUN [--json] [--png FILE]`: where a run's time went: goodput, the badput breakdown, each attempt and
what a failure cost, from its record (insight/run_report.py)."""

import json
import sys


def report(args) -> int:
    from launcher import records
    from launcher.backends import registry
    from launcher.insight.report_text import report_text
    from launcher.insight.run_report import build
    from launcher.lookup import find_record, state_now
    record = find_record(args.run_root, args.run_id)
    record.read_status(strict=True)
    state, _ = state_now(record)
    status = record.read_status()
    if records.untrusted(record) is None:   # the node logs where they are written elsewhere (a login host)
        registry.backend(status.backend).fetch_logs(record, status)
    data = build(record, status, state)
    if args.png:
        from launcher.insight.report_png import draw
        draw(data, args.png)
    if args.json:
        print(json.dumps({k: v for k, v in data.items()}, indent=2))
    else:
        sys.stdout.write(report_text(data))
        if args.png:
            print(f"timeline drawn in {args.png}")
    return 0


def add_args(sub, record_args) -> None:
    p = sub.add_parser("report", help="where a run's time went: goodput, badput by cause, attempts, stragglers")
    p.add_argument("run_id", nargs="?", help="run id (default: the latest run); its first characters will do")
    p.add_argument("--json", action="store_true", help="the same as data, with the whole timeline")
    p.add_argument("--png", metavar="FILE", help="draw the timeline into FILE (a PNG)")
    record_args(p)


__all__ = ["report", "add_args"]
