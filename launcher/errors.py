"""User-facing errors: one line, exit code 2, never a traceback."""

USER_ERROR_EXIT = 2


class KitError(Exception):
    """A mistake in the user's input; the message names the field and the fix."""

    exit_code = USER_ERROR_EXIT


def one_line(text: str) -> str:
    """A message that quotes the user's own value stays one line: control characters (a newline in a path) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
