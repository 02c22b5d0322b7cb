"""Where SLURM commands run and where the cluster's workdir is reached: this machine (subprocess, local files) or
a login host (`slurm.login_host`: one SSH connection, commands on exec channels, files over SFTP). The SLURM
backend, its queries and its preflight call only this interface, so submitting from elsewhere is one choice made
here, not a test in every caller.

Secrets never go on a command line: a command's added environment travels on the channel's stdin (NUL-separated
NAME=VALUE, exported by the remote shell before it execs the command), or in the local process environment."""

import logging
import os
import re
import shlex
import shutil
import stat
import subprocess
from dataclasses import dataclass
from typing import Callable, Optional

from launcher.errors import KitError, SchedulerError

log = logging.getLogger(__name__)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CommandError(Exception):
    """The command could not be run at all (not found, timed out, connection lost): not an exit status."""


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


class _Slurm:
    """The SLURM questions both places ask the same way, through their own run() (stderr captured: a cluster
    without accounting makes sacct print an error at every poll)."""

    where: str  # the place, as messages name it
    run: Callable[..., Result]

    def accounting_state(self, job_id: str) -> str:
        """The job's state as sacct has it; UNKNOWN without accounting or before sacct has a row."""
        try:
            r = self.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"], timeout=20.0)
        except CommandError:
            return "UNKNOWN"
        rows = [row.strip() for row in r.out.splitlines() if row.strip()] if r.code == 0 else []
        return rows[-1].split()[0].upper() if rows else "UNKNOWN"

    def cancel(self, job_id: str) -> None:
        try:
            r = self.run(["scancel", job_id], timeout=20.0)
        except CommandError as e:
            raise SchedulerError(
                f"scancel {job_id} on {self.where} could not run: {e}", command=f"scancel {job_id}", said=str(e)
            ) from None
        if r.code != 0:
            why = (r.err.strip().splitlines() or [f"exit {r.code}"])[-1]
            raise SchedulerError(
                f"scancel {job_id} on {self.where} failed: {why}", command=f"scancel {job_id}", said=why
            )


class Local(_Slurm):
    """SLURM's client commands on this machine; the workdir is a directory here (shared with the nodes)."""

    remote = False
    where = "this machine"

    def run(
        self,
        argv: list[str],
        *,
        cwd: Optional[str] = None,
        env: Optional[dict] = None,
        drop=None,
        timeout: float = 60.0,
    ) -> Result:
        """`env`: variables added to this process's environment, minus the names `drop` (an InheritPolicy) drops."""
        full = None
        if env is not None or drop is not None:
            full = {k: v for k, v in os.environ.items() if drop is None or not drop.drops(k)}
            full.update(env or {})
        log.debug("kit: debug: runs here: %s", shlex.join(argv))
        try:
            r = subprocess.run(
                argv, cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CommandError(str(e)) from None
        return Result(r.returncode, r.stdout, r.stderr)

    def which(self, tools) -> dict:
        return {t: shutil.which(t) for t in tools}

    def absolute(self, path: str) -> str:
        return os.path.abspath(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def read(self, path: str, offset: int = 0) -> Optional[bytes]:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return None

    def mtime(self, path: str) -> Optional[float]:
        try:
            return os.path.getmtime(path)
        except OSError:
            return None

    def listdir(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except OSError:
            return []

    def write(self, path: str, content: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        tmp = f"{path}.kit-tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(tmp, path)


# The remote side of LoginHost.run: unset what the plan's inherit policy drops, export the variables read from
# stdin, cd, exec. `bash --norc`: the login shell that runs this has read the user's rc files already.
_REMOTE = '{unset}while IFS= read -r -d "" kit_kv; do export "$kit_kv"; done; cd "$1" || exit 1; shift; exec "$@"'


def _unset_text(drop) -> str:
    if drop is None:
        return ""
    patterns = [f"{p}*" for p in drop.drop_prefixes] + list(drop.drop_names)
    # Names only (checked): they are spliced into a case pattern unquoted so that `*` matches.
    patterns = [p for p in patterns if _ENV_NAME.match(p.rstrip("*"))]
    if not patterns:
        return ""
    return f'for kit_v in $(compgen -e); do case "$kit_v" in {"|".join(patterns)}) unset "$kit_v";; esac; done; '


class LoginHost(_Slurm):
    """SLURM's client commands on a login host over one SSH connection; its workdir over SFTP."""

    remote = True

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.where = f"login {endpoint.where}"
        self._conn = None
        self._sftp = None

    def _connection(self):
        if self._conn is not None and not self._conn.alive():
            self._drop()
        if self._conn is None:
            from launcher.transport.hostkeys import Accepted
            from launcher.transport.connect import connect

            try:
                self._conn = connect(self.endpoint, Accepted())
            except KitError as e:  # one line naming the host and why
                raise KitError(f"slurm.login_host: {e}") from None
            self._sftp = None
        return self._conn

    def _drop(self) -> None:
        """Forget a broken connection (closed, so paramiko's thread ends); the next call logs in again."""
        if self._conn is not None:
            self._conn.close()
        self._conn = self._sftp = None

    def reach(self) -> None:
        self._connection()

    def _files(self):
        if self._sftp is None:
            self._sftp = self._connection().client.open_sftp()
        return self._sftp

    def run(
        self,
        argv: list[str],
        *,
        cwd: Optional[str] = None,
        env: Optional[dict] = None,
        drop=None,
        timeout: float = 60.0,
    ) -> Result:
        script = _REMOTE.format(unset=_unset_text(drop))
        words = ["bash", "--norc", "-c", script, "kit-slurm", cwd or ".", *argv]
        stdin = b"".join(f"{k}={v}".encode() + b"\0" for k, v in (env or {}).items() if _ENV_NAME.match(k))
        log.debug("kit: debug: runs on %s: %s", self.where, shlex.join(argv))
        try:
            code, out, err = self._connection().run(" ".join(map(shlex.quote, words)), timeout=timeout, stdin=stdin)
        except KitError:
            raise
        except Exception as e:  # a dropped connection or a timeout on the channel
            self._drop()
            raise CommandError(f"{self.where}: {e or type(e).__name__}") from None
        return Result(code, out, err)

    def which(self, tools) -> dict:
        r = self.run(["bash", "-c", 'for t; do printf "%s=%s\\n" "$t" "$(command -v "$t")"; done', "kit", *tools])
        found = dict(line.split("=", 1) for line in r.out.splitlines() if "=" in line)
        return {t: found.get(t) or None for t in tools}

    def _file_op(self, op, default):
        """An SFTP call; a missing file is `default`, a lost connection a CommandError."""
        try:
            return op(self._files())
        except IOError:
            return default
        except KitError:
            raise
        except Exception as e:
            self._drop()
            raise CommandError(f"{self.where}: SFTP: {e or type(e).__name__}") from None

    def absolute(self, path: str) -> str:
        return self._file_op(lambda sftp: sftp.normalize(path), path)

    def _stat(self, path: str):
        return self._file_op(lambda sftp: sftp.stat(path), None)

    def is_dir(self, path: str) -> bool:
        st = self._stat(path)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def is_file(self, path: str) -> bool:
        st = self._stat(path)
        return st is not None and stat.S_ISREG(st.st_mode)

    def read(self, path: str, offset: int = 0) -> Optional[bytes]:
        def op(sftp):
            with sftp.open(path, "rb") as f:
                f.seek(offset)
                return f.read()

        return self._file_op(op, None)

    def mtime(self, path: str) -> Optional[float]:
        st = self._stat(path)
        return None if st is None else float(st.st_mtime)

    def listdir(self, path: str) -> list[str]:
        return self._file_op(lambda sftp: sftp.listdir(path), [])

    def write(self, path: str, content: str) -> None:
        try:
            self._connection().put(path, content)
        except KitError:
            raise
        except Exception as e:  # paramiko's IOError (no such directory, no permission) or a lost connection
            raise CommandError(f"{self.where}: cannot write {path}: {e or type(e).__name__}") from None


_LOGIN_HOSTS: dict = {}


def _login_host(name: str, settings: dict) -> LoginHost:
    """One connection per login host in this process: preflight, sbatch and following share it."""
    from launcher.transport.endpoint import resolve

    endpoint = resolve(name, None, settings)
    key = (endpoint.name, endpoint.hostname, endpoint.port, endpoint.user)
    if key not in _LOGIN_HOSTS:
        _LOGIN_HOSTS[key] = LoginHost(endpoint)
    return _LOGIN_HOSTS[key]


def where_at(login_host: Optional[str], login_ssh: Optional[dict]):
    """Here, or the named login host reached with these connection settings (a record's or a binding's)."""
    if not login_host:
        return Local()
    return _login_host(login_host, login_ssh or {})
