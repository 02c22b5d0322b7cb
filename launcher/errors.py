"""kit's errors: one line each, never a traceback, worded at the edge (the command line and the Python API each in
its own terms). kit's other lines are logged: launcher/logs.py.

    KitError            kit will not go on. Raised as itself: the user's mistake (input, a choice), exit code 2
    ├── SchedulerError  the scheduler refused, or could not be asked (sbatch, scancel, scontrol), exit code 69
    └── RecordError     a run or sweep record kit cannot read, or whose lock another process holds, exit code 74

An error that names an option of `kit submit` carries it as an Option (data), not as text: the command line says
`--nodes 2`, the API `nodes=2` (launcher/api.py), from the same error."""

USER_ERROR_EXIT = 2
SCHEDULER_EXIT = 69  # sysexits.h EX_UNAVAILABLE: a service kit needs refused or did not answer
RECORD_EXIT = 74  # sysexits.h EX_IOERR: a file kit keeps could not be read or locked


class Option:
    """An option that an error names: its canonical name (the API's keyword: nodes, gpus, procs_per_node,
    strategy, mixed_precision, port, run_id, run_root, cluster, sweep, set; args: the job's own arguments) and
    the value given, where the line shows one (`quoted`: shown as repr on the command line)."""

    def __init__(self, name: str, value=None, quoted: bool = False):
        self.name, self.value, self.quoted = name, value, quoted

    def __eq__(self, other) -> bool:
        return isinstance(other, Option) and (self.name, self.value, self.quoted) == (
            other.name,
            other.value,
            other.quoted,
        )

    def __hash__(self) -> int:
        return hash((self.name, str(self.value)))

    def __repr__(self) -> str:
        return f"Option({self.name!r}, {self.value!r})"


def flag(option: Option) -> str:
    """An option in the command line's words: `--nodes 2`, `--procs-per-node`, `--set key=value`; the job's own
    arguments as where they go (`after --: kit submit JOB -- --lr 0.1`)."""
    if option.name == "args":
        import shlex

        return f"after --: kit submit JOB -- {shlex.join(option.value)}"
    text = "--" + option.name.replace("_", "-")
    if option.value is None:
        return text
    return f"{text} {option.value!r}" if option.quoted else f"{text} {option.value}"


def _flat(parts) -> tuple:
    """Text and Options, in order: a nested tuple (a phrase built elsewhere) spliced in, anything else as text."""
    out: list = []
    for part in parts:
        if isinstance(part, tuple):
            out.extend(_flat(part))
        else:
            out.append(part if isinstance(part, (str, Option)) else str(part))
    return tuple(out)


class KitError(Exception):
    """kit will not go on: one line that names the field and the fix. Raised as itself, the user's mistake (exit
    code 2). Built from text and Options (`KitError(Option("nodes", 4), ": more than the cluster has")`); str()
    is the command line's words, `worded(say)` another face's."""

    exit_code = USER_ERROR_EXIT

    def __init__(self, *parts):
        super().__init__(*parts)
        self.parts = _flat(parts)
        self.say = flag

    def worded(self, say=flag) -> str:
        """The line with each Option said by `say` (an Option -> its words)."""
        return "".join(p if isinstance(p, str) else say(p) for p in self.parts)

    def in_terms(self, say) -> "KitError":
        """This error, its Options said by `say` from now on (str() included); the same object."""
        self.say = say
        return self

    def __str__(self) -> str:
        return self.worded(self.say)


class SchedulerError(KitError):
    """The scheduler refused, or could not be asked: `command` is what kit ran (`sbatch`, `scancel 42`), `said`
    the scheduler's own last words (or why it could not run). Not the user's mistake as such: exit code 69."""

    exit_code = SCHEDULER_EXIT

    def __init__(self, *parts, command: str = "", said: str = ""):
        super().__init__(*parts)
        self.command, self.said = command, said


class RecordError(KitError):
    """A run or sweep record kit cannot use: a file in it unreadable, or its lock held by another process for too
    long; `path` is the record (or file) concerned. Exit code 74."""

    exit_code = RECORD_EXIT

    def __init__(self, *parts, path: str = ""):
        super().__init__(*parts)
        self.path = path


# Several independent errors (one per host) are raised as one KitError whose lines each read like a single error.
PER_LINE = "\nkit: error: "


def per_line(messages: list) -> KitError:
    """One error per line, each printed as its own `kit: error:` line; a message is text, or a tuple of text and
    Options."""
    parts: list = []
    for i, message in enumerate(messages):
        parts.extend([PER_LINE, message] if i else [message])
    return KitError(*parts)


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
