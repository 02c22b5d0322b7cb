"""Turn pydantic's multi-line validation reports into kit's one-line errors."""

from pydantic import ValidationError


# Type-mismatch errors of the union branch the user did not write (a mapping where a string was allowed).
_BRANCH_MISMATCH = {"string_type", "int_type", "float_type", "bool_type", "model_type", "dict_type",
                    "model_attributes_type", "is_instance_of"}
_INTERNAL_PREFIXES = ("constrained-", "function-", "lax-or-strict", "json-or-python", "tagged-union")
_SCALAR_LABELS = {"str", "int", "float", "bool", "list", "dict"}


def _is_label(item: str, model_names: set) -> bool:
    """pydantic puts union-branch labels ("Host", "constrained-int") into loc; they mean nothing to a user."""
    return item in _SCALAR_LABELS or item in model_names or item.startswith(_INTERNAL_PREFIXES)


def _model_names(model) -> set:
    names, todo = set(), [model]
    while todo:
        m = todo.pop()
        if m.__name__ in names:
            continue
        names.add(m.__name__)
        for field in m.model_fields.values():
            for candidate in (field.annotation, *_args_deep(field.annotation)):
                if hasattr(candidate, "model_fields"):
                    todo.append(candidate)
    return names


def _args_deep(ann):
    for arg in getattr(ann, "__args__", ()):
        yield arg
        yield from _args_deep(arg)


def _loc_path(loc, model_names: set) -> str:
    parts = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif not _is_label(item, model_names):
            parts.append(("." if parts else "") + item)
    return "".join(parts)


def _most_relevant(errors: list) -> dict:
    """The error of the form the user actually wrote: other branches' type mismatches go last."""
    return sorted(errors, key=lambda e: e["type"] in _BRANCH_MISMATCH and len(errors) > 1)[0]


def _valid_keys(model, loc) -> list[str]:
    """Walk the schema to the mapping that held an unknown key, to list what it accepts."""
    for item in loc[:-1]:
        field = getattr(model, "model_fields", {}).get(item) if isinstance(item, str) else None
        if field is None:
            continue
        ann = field.annotation
        for candidate in (ann, *_args_deep(ann)):
            if hasattr(candidate, "model_fields"):
                model = candidate
                break
    return sorted(getattr(model, "model_fields", {}))


def one_line(err: ValidationError, model, source: str, said: dict[str, str] | None = None) -> str:
    """The first error, as `source: field: what is wrong (the fix)`. With `said` (dotted field -> how the user
    wrote it on the command line, e.g. "gpus_per_node" -> "--gpus -1"), an error in a field the user set that way
    is told in their words: `--gpus -1: Input should be ...`."""
    first = _most_relevant(err.errors(include_url=False))
    names = _model_names(model)
    loc = tuple(item for item in first["loc"] if isinstance(item, int) or not _is_label(item, names))
    where = _loc_path(loc, names) or "(top level)"
    if first["type"] == "extra_forbidden":
        keys = ", ".join(_valid_keys(model, loc))
        return f"{source}: unknown key '{where}'; valid keys here: {keys}"
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        msg = "required key is missing"
    for key, words in (said or {}).items():
        if where == key or where.startswith((key + ".", key + "[")):
            return f"{words}: {msg}"   # the value is in their words already
    if first["type"] not in ("value_error", "missing") and "input" in first:
        msg += f" (got {first['input']!r})"
    return f"{source}: {where}: {msg}"
