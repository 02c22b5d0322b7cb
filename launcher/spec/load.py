"""Read job and cluster YAML files strictly: no duplicate keys, no unknown keys, no tracebacks."""

import json
from typing import Any

import yaml
from pydantic import ValidationError

from launcher.errors import KitError
from launcher.spec.errors import one_line


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise KitError(f"{what} {path}: no such file (check the path)") from None
    except IsADirectoryError:
        raise KitError(f"{what} {path}: is a directory, expected a YAML file") from None
    except UnicodeDecodeError as e:
        raise KitError(f"{what} {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise KitError(f"{what} {path}: cannot read ({e.strerror})") from None


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise KitError(f"{source}: {where}invalid YAML: {problem}") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise KitError(f"{source}: expected a mapping of keys at the top level, got {kind}")
    return data


def validate(model, data: dict, source: str, said=None):
    """`data` as `model`, or one line naming the field (in the user's words where `said` has them). A model whose
    fields depend on the data (ClusterSpec: its backend's sections) names the one that validates it."""
    if hasattr(model, "model_for"):
        model = model.model_for(data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise KitError(one_line(e, model, source, said)) from None


def load_json(path: str, what: str):
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise KitError(f"{what} {path}: line {e.lineno}: invalid JSON: {e.msg}") from None
