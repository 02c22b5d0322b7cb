"""Stable serialisations: sorted keys, fixed layout, so golden files change only with behaviour; and how kit writes
a duration (kit status, kit runs, a sweep's table), one way everywhere."""

import json
from typing import Optional

import yaml


def to_yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False, allow_unicode=True)


def to_json(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def duration(seconds: Optional[float]) -> str:
    """12s, 4m05s, 2h03m, 3d04h: short and sortable by eye."""
    if seconds is None or seconds < 0:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
