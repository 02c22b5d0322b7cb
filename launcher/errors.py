"""User-facing errors: one line, exit code 2, never a traceback."""

USER_ERROR_EXIT = 2


class KitError(Exception):
    """A mistake in the user's input; the message names the field and the fix."""

    exit_code = USER_ERROR_EXIT
