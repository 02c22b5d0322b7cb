"""A backend's handle on a run: the facts only that backend keeps about it (a SLURM job id and where its commands
run, an SSH run's connection settings), declared by the backend (its `handle` part, backends/registry.py), kept in
status.json under one key, "handle", and checked field by field when read, by the backend's own rules (a record is
data that anyone who can write into a shared run root could have written). Records written before handles kept
these fields at the top level: they are read from there.

A handle is a frozen dataclass whose fields each carry their check (wellformed.checked); RunStatus.replace and
RunRecord.update_status set them by name like the status's own fields."""

import dataclasses
from dataclasses import dataclass, fields
from typing import Optional

from launcher.wellformed import BadStatus


@dataclass(frozen=True)
class Handle:
    @classmethod
    def read(cls, data: dict) -> "Handle":
        """The handle in status.json's `data`: its "handle" mapping, or (an older record) its fields at the top
        level. BadStatus names the first field that is not well-formed."""
        old = "handle" not in data
        source = data if old else data["handle"]
        if source is None:
            return cls()
        if not isinstance(source, dict):
            raise BadStatus(f"handle: expected a mapping, got {source!r}")
        values = {}
        for f in fields(cls):
            if f.name in source:
                try:
                    values[f.name] = f.metadata["check"](source[f.name])
                except BadStatus as e:
                    raise BadStatus(f"{f.name if old else 'handle.' + f.name}: {e}") from None
        return cls(**values)

    def replace(self, **changes) -> "Handle":
        """A copy with `changes` applied, each checked; a name that is no field is a bug (TypeError)."""
        checks = {f.name: f.metadata["check"] for f in fields(self)}
        unknown = [k for k in changes if k not in checks]
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {unknown[0]!r}")
        return dataclasses.replace(self, **{k: checks[k](v) for k, v in changes.items()})

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def scheduler_job_id(self) -> Optional[str]:
        """The id a scheduler knows the run by (`kit status` shows it), or None: kit itself follows the run."""
        return None
