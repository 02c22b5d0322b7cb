"""Stable serialisations: sorted keys, fixed layout, so golden files change only with behaviour."""

import json

import yaml


def to_yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False, allow_unicode=True)


def to_json(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
