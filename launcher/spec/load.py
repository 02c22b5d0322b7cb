"""Read job and cluster YAML files strictly: no duplicate keys, no unknown keys, no tracebacks."""

import json
from typing import Any, Optional

import yaml
from pydantic import ValidationError

from launcher.errors import KitError, per_line
from launcher.spec.errors import all_lines


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
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


# PyYAML's words for the commonest slips, in a user's: (its problem begins, its context begins, kit's words).
_YAML_WORDS = (
    ("found unexpected end of stream", "while scanning a quoted scalar", "a quote opened here is never closed"),
    ("expected ',' or '}'", "while parsing a flow mapping", "a '{' opened here is not closed by a '}'"),
    ("expected ',' or ']'", "while parsing a flow sequence", "a '[' opened here is not closed by a ']'"),
    ("could not find expected ':'", "while scanning a simple key", "a key without its ':' (write key: value)"),
    ("found character '\\t'", "", "a tab; YAML indents with spaces only"),
    (
        "mapping values are not allowed here",
        "",
        "a ':' that cannot be here: this line is indented deeper than the key above it, or a value holds ': ' "
        "(quote the value)",
    ),
    (
        "expected <block end>, but found '<block mapping start>'",
        "",
        "this line's indentation does not match the lines above",
    ),
    ("expected <block end>, but found '<scalar>'", "", "more text after a value's end (quote the whole value)"),
    ("expected <block end>, but found '-'", "", "a list item among keys (indent it under its key)"),
)


def _yaml_line(e: yaml.YAMLError) -> tuple[Optional[int], str]:
    """(1-based line of the mistake, what is wrong). PyYAML marks where it gave up (problem_mark): for a quote or
    bracket left open that is a later line, or the end of the file; the mistake is where the open construct
    began (context_mark). For the rest (a tab, a bad indent, a duplicate key) the problem mark is the line."""
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    context = getattr(e, "context", None) or ""
    mark = getattr(e, "problem_mark", None)
    context_mark = getattr(e, "context_mark", None)
    if context_mark is not None and context.startswith(
        ("while scanning a quoted", "while scanning a simple key", "while parsing a flow")
    ):
        mark = context_mark
    mark = mark or context_mark
    for start, in_context, words in _YAML_WORDS:
        if problem.startswith(start) and context.startswith(in_context):
            problem = words
            break
    return (mark.line + 1 if mark else None), problem


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as e:
        line, problem = _yaml_line(e)
        where = f"line {line}: " if line else ""
        raise KitError(f"{source}: {where}invalid YAML: {problem}") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise KitError(f"{source}: expected a mapping of keys at the top level, got {kind}")
    return data


def validate(model, data: dict, source: str, said=None):
    """`data` as `model`, or every mistake at once, one line each (in the user's words where `said` has them),
    under a one-line header when there are several. A model whose fields depend on the data (ClusterSpec: its
    backend's sections) names the one that validates it."""
    if hasattr(model, "model_for"):
        model = model.model_for(data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        lines = all_lines(e, model, source, said)
        if len(lines) == 1:
            raise KitError(*lines[0]) from None
        raise per_line(
            [f"{source}: {len(lines)} mistakes, each on a line below; fix them all, then submit again", *lines]
        ) from None


def load_json(path: str, what: str):
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise KitError(f"{what} {path}: line {e.lineno}: invalid JSON: {e.msg}") from None
