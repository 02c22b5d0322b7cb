"""Turn pydantic's multi-line validation reports into kit's one-line errors."""

from pydantic import ValidationError


def _loc_path(loc) -> str:
    # pydantic puts union-branch names ("Host", "int") into loc; they mean nothing to a user.
    parts = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item[:1].isupper() or item in ("str", "int", "constrained-str", "function-after"):
            continue
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts)


def _valid_keys(model, loc) -> list[str]:
    """Walk the schema to the mapping that held an unknown key, to list what it accepts."""
    for item in loc[:-1]:
        field = getattr(model, "model_fields", {}).get(item) if isinstance(item, str) else None
        if field is None:
            continue
        ann = field.annotation
        for candidate in (ann, *getattr(ann, "__args__", ())):
            if hasattr(candidate, "model_fields"):
                model = candidate
                break
    return sorted(getattr(model, "model_fields", {}))


def one_line(err: ValidationError, model, source: str) -> str:
    """The first error, as `source: field: what is wrong (the fix)`."""
    first = err.errors(include_url=False)[0]
    loc = first["loc"]
    where = _loc_path(loc) or "(top level)"
    if first["type"] == "extra_forbidden":
        keys = ", ".join(_valid_keys(model, loc))
        return f"{source}: unknown key '{where}'; valid keys here: {keys}"
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] not in ("value_error", "missing") and "input" in first:
        msg += f" (got {first['input']!r})"
    if first["type"] == "missing":
        msg = "required key is missing"
    return f"{source}: {where}: {msg}"
