"""Turn pydantic's multi-line validation reports into kit's one-line errors."""

from pydantic import ValidationError

from launcher.errors import Option, did_you_mean


# Type-mismatch errors of the union branch the user did not write (a mapping where a string was allowed).
_BRANCH_MISMATCH = {
    "string_type",
    "int_type",
    "float_type",
    "bool_type",
    "model_type",
    "dict_type",
    "model_attributes_type",
    "is_instance_of",
}
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


def _relevant(errors: list, names: set) -> list[tuple[tuple, dict]]:
    """(location, error) of each mistake, once: the error of the form the user actually wrote. A type mismatch of
    a union branch the user did not write goes when an error lies under its place, or another kind of error at it
    (the branch they did write); one error per place is kept."""
    located = [(tuple(i for i in e["loc"] if isinstance(i, int) or not _is_label(i, names)), e) for e in errors]

    def written_elsewhere(loc: tuple) -> bool:
        return any(
            at[: len(loc)] == loc and (len(at) > len(loc) or other["type"] not in _BRANCH_MISMATCH)
            for at, other in located
        )

    kept: dict[tuple, dict] = {}
    for loc, e in located:
        if e["type"] in _BRANCH_MISMATCH and written_elsewhere(loc):
            continue
        kept.setdefault(loc, e)
    return list(kept.items())


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


def _unknown_key(model, loc, where: str, said_as: Option | None) -> tuple:
    """An unknown key: the key that is close, or for a `--set` of a top-level key the job's own argument."""
    valid = _valid_keys(model, loc)
    key = str(loc[-1]) if loc else where
    given = str(said_as.value) if said_as is not None and said_as.name == "set" else None
    # `--set cluster.gpus=8` is told as the user wrote it, `cluster.gpus`, not as the cluster spec's `gpus`.
    user_key = given.split("=", 1)[0].rstrip("+") if given is not None else where
    shown = user_key.removesuffix(where) + where if user_key.endswith(where) else where
    if close := did_you_mean(key, valid):
        return (f"unknown key '{shown}'; did you mean '{shown.removesuffix(key) + close}'?",)
    text = f"unknown key '{shown}' (valid keys here: {', '.join(valid)})"
    if given is not None and not given.startswith("cluster.") and len(loc) == 1:
        value = given.split("=", 1)[1]
        # The job's own argument: after -- on the command line, in args=[...] from Python.
        return (
            f"{text}; if {key} is an argument of your script, give it ",
            Option("args", [f"--{key}", *([value] if value else [])]),
        )
    return (text,)


def _line(loc: tuple, error: dict, model, source: str, said: dict[str, Option]) -> tuple:
    where = _loc_path(loc, set()) or "(top level)"
    said_as = next(
        (option for key, option in said.items() if where == key or where.startswith((key + ".", key + "["))), None
    )
    if error["type"] == "extra_forbidden":
        return (said_as or source, ": ", *_unknown_key(model, loc, where, said_as))
    msg = error["msg"].removeprefix("Value error, ")
    if error["type"] == "missing":
        msg = "required key is missing"
    if said_as is not None:
        return (said_as, f": {msg}")  # the value is in their words already
    if error["type"] not in ("value_error", "missing") and "input" in error:
        msg += f" (got {error['input']!r})"
    return (f"{source}: {where}: {msg}",)


def all_lines(err: ValidationError, model, source: str, said: dict[str, Option] | None = None) -> list[tuple]:
    """Every mistake, one line each (text and Options), as `source: field: what is wrong (the fix)`; an unknown
    key with the valid key that is close (`did you mean 'nodes'?`). With `said` (dotted field -> the option the
    user set it with, e.g. "gpus_per_node" -> Option("gpus", -1)), a mistake in a field the user set that way is
    told in their words: `--gpus -1: Input should be ...` (`gpus=-1: ...` from Python)."""
    return [
        _line(loc, e, model, source, said or {})
        for loc, e in _relevant(err.errors(include_url=False), _model_names(model))
    ]


def one_line(err: ValidationError, model, source: str, said: dict[str, Option] | None = None) -> tuple:
    """The first mistake's line (all_lines)."""
    return all_lines(err, model, source, said)[0]
