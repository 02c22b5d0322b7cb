"""`kit report RUN [--json] [--png FILE]`: where a run's time went: goodput, the badput breakdown, each attempt and
what a failure cost, from its record (core/report.py)."""

import json
import sys


def report(args) -> int:
    from launcher.core.listing import find_record
    from launcher.core.report import draw_png, report_run
    from launcher.insight.report_text import report_text

    data = report_run(find_record(args.run_root, args.run_id))
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        sys.stdout.write(report_text(data))
    sys.stdout.flush()
    if args.png:  # after the report: a path that cannot be written costs the drawing only (one line, exit 2)
        draw_png(data, args.png)
        if not args.json:
            print(f"timeline drawn in {args.png}")
    return 0


def add_args(sub, record_args) -> None:
    p = sub.add_parser("report", help="where a run's time went: goodput, badput by cause, attempts, stragglers")
    p.add_argument("run_id", nargs="?", help="run id (default: the latest run); its first characters will do")
    p.add_argument("--json", action="store_true", help="the same as data, with the whole timeline")
    p.add_argument("--png", metavar="FILE", help="draw the timeline into FILE (a PNG)")
    record_args(p)


__all__ = ["report", "add_args"]
