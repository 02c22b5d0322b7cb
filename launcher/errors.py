"""User-facing errors: one line, exit code 2, never a traceback. (kit's other lines are logged: launcher/logs.py.)"""

USER_ERROR_EXIT = 2


class KitError(Exception):
    """A mistake in the user's input; the message names the field and the fix."""

    exit_code = USER_ERROR_EXIT


# Several independent errors (one per host) are raised as one KitError whose lines each read like a single error.
PER_LINE = "\nkit: error: "


def per_line(messages: list[str]) -> KitError:
    """One error per line, each printed as its own `kit: error:` line."""
    return KitError(PER_LINE.join(messages))


def one_line(text: str) -> str:
    """A message that quotes the user's own value stays one line: control characters (a newline in a path) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def render(error: Exception) -> str:
    """The text after the first `kit: error: `: each of a per-line error's lines kept, each made one line."""
    return PER_LINE.join(one_line(part) for part in str(error).split(PER_LINE))


def did_you_mean(word: str, choices) -> str | None:
    """The one choice a mistyped `word` was meant to be: a close spelling (`node` -> `nodes`, `--node` ->
    `--nodes`), or the only choice it begins (`gpus` -> `gpus_per_node`); None when none or several fit."""
    import difflib
    choices = list(choices)
    if close := difflib.get_close_matches(word, choices, n=1, cutoff=0.8):
        return close[0]
    stem = word.rstrip("-_")
    longer = [c for c in choices if len(stem) >= 3 and c.startswith((stem + "_", stem + "-"))]
    return longer[0] if len(longer) == 1 else None

