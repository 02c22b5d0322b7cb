"""`.kitignore`: what code sync leaves out, in `.gitignore`'s rules, read from the sync source. Without the file, the
defaults: virtualenvs, bytecode caches, kit's run records and the outputs of earlier runs.

The rules, as git reads them: `#` comments and blank lines skipped; `!` re-includes; a trailing `/` matches
directories only; a pattern with a `/` before its end is taken from the source's top, one without matches at any
depth; `*` and `?` stay within a name, `**` spans directories, `[...]` is a class. A file under an excluded
directory cannot be re-included (git neither)."""

import os
import re
from dataclasses import dataclass
from typing import Optional

FILE = ".kitignore"
DEFAULTS = (".venv/", "__pycache__/", "/outputs/")


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern
    negate: bool
    dir_only: bool


def glob_body(pattern: str, classes: bool = True) -> str:
    """A glob as a regular expression's text: `*` and `?` within a name, `**` across directories, `[...]` a class
    (with `classes`; else brackets are themselves, as `sync.include` has always read them)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif classes and pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            out, i = out + "[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return out


def parse_rule(line: str) -> Optional[Rule]:
    """One line of a .kitignore as a rule; None for a comment or a blank line."""
    line = line.rstrip("\n")
    kept = line.rstrip(" ")
    if kept.endswith("\\") and len(kept) < len(line):  # `a\ `: a trailing space kept by its backslash
        kept = kept[:-1] + " "
    line = kept
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    line = line[1:] if negate else line.removeprefix("\\")
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    body = glob_body(line.lstrip("/"))
    return Rule(re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z"), negate, dir_only)


class Ignore:
    """The rules of one sync source; `excluded(rel)` for a file, `excluded_dir(rel)` to prune a walk."""

    def __init__(self, lines, source: str):
        self.rules = [r for r in (parse_rule(line) for line in lines) if r is not None]
        self.source = source
        self._dirs: dict[str, bool] = {}

    def _last_match(self, path: str, is_dir: bool) -> bool:
        hit = False
        for rule in self.rules:
            if (is_dir or not rule.dir_only) and rule.regex.match(path):
                hit = not rule.negate
        return hit

    def excluded_dir(self, rel: str) -> bool:
        if rel not in self._dirs:
            parent = rel.rpartition("/")[0]
            self._dirs[rel] = (bool(parent) and self.excluded_dir(parent)) or self._last_match(rel, True)
        return self._dirs[rel]

    def excluded(self, rel: str) -> bool:
        parent = rel.rpartition("/")[0]
        return (bool(parent) and self.excluded_dir(parent)) or self._last_match(rel, False)


def read_ignore(source: str, run_root: str) -> tuple[Ignore, bool, str]:
    """The source's `.kitignore` (or the defaults, the run root `run_root` among them, relative to the source):
    (the rules, whether they come from the file, how the dry-run names them). An unreadable file is one line."""
    path = os.path.join(source, FILE)
    try:
        with open(path, encoding="utf-8") as f:
            return Ignore(f.read().splitlines(), source), True, f"less {FILE}"
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as e:
        from launcher.errors import KitError

        raise KitError(
            f"sync: {path}: cannot be read ({getattr(e, 'strerror', None) or e}); fix or remove it"
        ) from None
    defaults = [*DEFAULTS, *([f"/{run_root}/"] if run_root and not run_root.startswith("..") else [])]
    return Ignore(defaults, source), False, f"less {', '.join(defaults)} (without a {FILE}, its defaults)"


__all__ = ["FILE", "DEFAULTS", "Ignore", "parse_rule", "read_ignore"]
