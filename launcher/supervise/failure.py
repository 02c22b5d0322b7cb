"""Why a run failed, in one line: the first failing node and rank, the rank's own exit code and its last words.

torchrun (under `accelerate launch`) exits 1 whatever its worker's code was, and prints the real one in its
ChildFailedError table ("Root Cause ... rank : R ... exitcode : C"); a single-process launch raises
CalledProcessError ("returned non-zero exit status C"). Both are read back from the node's log, which keeps
every line; pure functions over text, so every backend (local, ssh, slurm) summarises the same way.
"""

import dataclasses
import glob
import os
import re
import signal
from typing import Optional

from launcher.insight.events import is_insight
from launcher.planning.tags import PROGRESS_MARK
from launcher.status import HUNG, LOST, NEVER_JOINED, NOT_STARTED, PREEMPTED, Failure
from launcher.supervise.noise import (
    is_launcher_noise,
    is_launcher_traceback,
    is_library_note,
    is_worker_line,
    strip_tag,
)
from launcher.supervise.repeats import without_warnings
from launcher.supervise.tracebacks import is_consequence
from launcher.states import RunState

# The training module's own exit codes (train/__init__.py: EXIT_*; tests check the two agree). 75 (EX_TEMPFAIL)
# means "preempted, requeue me" whatever the program: a run ending so is preempted, not failed.
TRAIN_MODULE = "train"
TRAIN_EXIT_CODES = {
    2: "bad configuration",
    3: "world check failed",
    4: "bad data",
    5: "resume refused",
}
SETUP_FAILED = "kit: node setup failed"
OOM_HINT = "; out of memory? the kernel's OOM killer sends SIGKILL: see dmesg on the node"

_ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):")
_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_EXITCODE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")
_CALLED = re.compile(r"returned non-zero exit status (-?\d+)")


def meaning(code: int, known: dict) -> str:
    if code > 128 and code - 128 in signal.Signals._value2member_map_:
        return f"killed by {signal.Signals(code - 128).name}"
    if code == PREEMPTED:
        return "preempted, requeue me"
    return known.get(code, f"exit code {code}")


def _as_exit(code: int) -> int:
    """torchrun reports death by signal N as -N; shells say 128+N."""
    return 128 - code if code < 0 else code


def rank_exit(lines: list[str]) -> tuple[Optional[int], Optional[int]]:
    """(global rank, exit code) of the root cause the launcher reported, or (None, None)."""
    rank = code = None
    in_root = False
    for line in map(strip_tag, lines):
        if _ROOT_CAUSE.search(line):
            in_root, rank, code = True, None, None
        elif in_root and (m := _RANK.match(line)) and rank is None:
            rank = int(m.group(1))
        elif in_root and (m := _EXITCODE.match(line)) and code is None:
            code = _as_exit(int(m.group(1)))
        elif m := _CALLED.search(line):
            code = _as_exit(int(m.group(1)))
    return rank, code


def _before_launcher_traceback(lines: list[str]) -> list[str]:
    """The node's lines up to the launcher's own traceback (a rank's traceback, untagged on 1 process, stays)."""
    starts = [i for i, ln in enumerate(lines) if strip_tag(ln).startswith("Traceback (most recent call last):")]
    for i in reversed(starts):
        if is_launcher_traceback(lines[i:]):
            return lines[:i]
    return lines


def last_words(lines: list[str], node: int, rank: Optional[int]) -> str:
    """The failing rank's last meaningful line, never another rank's (`[nodeN/rankM]`, `[rankM]:`); or the node's."""
    own = f"[node{node}/rank{rank}] " if rank is not None else None
    said = without_warnings([ln[len(own) :] for ln in lines if own and ln.startswith(own)])
    for text in reversed(said):
        if text.strip() and not is_library_note(text, False):
            return _RANK_PREFIX.sub("", text.strip())
    for line in reversed(_before_launcher_traceback(lines)):
        if rank is not None and (
            is_worker_line(line) or ((m := _RANK_PREFIX.match(strip_tag(line))) and int(m.group(1)) != rank)
        ):
            continue
        text = strip_tag(line).strip()
        if text and not is_launcher_noise(text) and not is_library_note(text) and not text.startswith("Traceback"):
            return text
    return ""


def rank_stderr(ranks_dir: str, local_rank: int) -> str:
    """What torchrun teed of one rank's stderr (`--tee 3 --log_dir`), newest attempt; "" when there is none.

    The node log interleaves a rank's stdout and stderr from two tail threads, so its last line may be stdout;
    the rank's own stderr file ends with what it said last about its error."""
    paths = glob.glob(os.path.join(ranks_dir, "*", "attempt_*", str(local_rank), "stderr.log"))
    return read_log(max(paths, key=os.path.getmtime)) if paths else ""


def summarize(
    node: int,
    host: str,
    node_code: int,
    log_text: str,
    known: dict = TRAIN_EXIT_CODES,
    ranks_dir: str = "",
    procs_per_node: int = 1,
) -> Failure:
    """`known`: what the entrypoint's exit codes mean (the training module's, or none for another program)."""
    # The training module's lines for kit (insight/events.py) are never a rank's last words.
    lines = [ln for ln in log_text.splitlines() if ln.strip() and not is_insight(ln)]
    setup = [ln for ln in lines if SETUP_FAILED in ln]
    if setup:
        return Failure(node, host, None, node_code, "setup failed", strip_tag(setup[-1]).strip())
    rank, code = rank_exit(lines)
    code = node_code if code is None else code
    words = last_words(lines, node, rank)
    if ranks_dir and rank is not None:
        own = _said(ranks_dir, rank - node * procs_per_node)
        # A known code's explanation starts with its meaning ("resume refused: ..."): the rank's own, else, for a
        # collective refusal (every rank exits with the code, only the main process explains), another rank's.
        explained = code in known and (
            _starting(own, known[code]) or _others_said(ranks_dir, node, rank, procs_per_node, known[code])
        )
        if explained:
            words = explained
        elif own:
            words = final_words(own)
        elif meaning(code, known).startswith("killed by ") and glob.glob(
            os.path.join(ranks_dir, "*", "attempt_*", str(rank - node * procs_per_node), "stderr.log")
        ):
            words = ""  # its stderr is empty: a rank killed from outside said nothing of it (stdout is progress)
        if is_consequence(words):
            rank, code, words = _real_cause(lines, ranks_dir, node, procs_per_node) or (rank, code, words)
    return Failure(node, host, rank, code, meaning(code, known), words)


def _failures(lines: list[str]) -> list[tuple[int, int]]:
    """(global rank, exit code) of each failure but the root cause in the launcher's last report."""
    starts = [i for i, ln in enumerate(lines) if strip_tag(ln).startswith("Failures:")]
    found, rank = [], None
    for line in map(strip_tag, lines[starts[-1] :] if starts else []):
        if _ROOT_CAUSE.search(line):
            break
        if m := _RANK.match(line):
            rank = int(m.group(1))
        elif (m := _EXITCODE.match(line)) and rank is not None:
            found.append((rank, _as_exit(int(m.group(1)))))
            rank = None
    return found


def _real_cause(lines, ranks_dir: str, node: int, procs_per_node: int):
    """The launcher saw first a rank that died of another's failure (its collective lost its peer, and it aborted
    before the other exited): (rank, code, words) of a rank of this node that failed with a traceback of its own
    error, else of one that ended by itself (its own exit code, no signal, no traceback) with words, or None."""
    for rank, code in _failures(lines):
        local = rank - node * procs_per_node
        said = _said(ranks_dir, local) if 0 <= local < procs_per_node else []
        words = final_words(said)
        if any(ln.startswith("Traceback") for ln in said) and words and not is_consequence(words):
            # Its exception ended it; torchrun's SIGTERM to the survivors can land while its interpreter exits
            # (the table then says -15): an uncaught exception's exit code, Python's 1, is the one it was ending with.
            # Any other signal (SIGKILL from the OOM killer) came from outside and stays the cause.
            return rank, 1 if code == 128 + signal.SIGTERM else code, words
    for rank, code in _failures(lines):
        local = rank - node * procs_per_node
        if 0 < code < 128 and 0 <= local < procs_per_node:
            own = f"[node{node}/rank{rank}] "
            words = final_words(_said(ranks_dir, local) or [ln[len(own) :] for ln in lines if ln.startswith(own)])
            if words and not is_consequence(words):
                return rank, code, words
    return None


_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]: ")


def _said(ranks_dir: str, local_rank: int, starting: Optional[str] = None):
    """One rank's teed stderr lines (split on "\n" only: progress redraws start with a mark and are not what the
    rank said about its error; torch's "[rankN]: " prefix and library warnings dropped); with `starting`, the last
    line that starts so, or ""."""
    said = [
        _RANK_PREFIX.sub("", ln).rstrip()
        for ln in rank_stderr(ranks_dir, local_rank).split("\n")
        if not ln.startswith(("\r", PROGRESS_MARK))
    ]
    said = without_warnings([ln for ln in said if ln.strip()])
    return said if starting is None else _starting(said, starting)


def _starting(lines: list[str], start: str) -> str:
    """The last of `lines` that starts with `start`, or ""."""
    return next((ln.strip() for ln in reversed(lines) if ln.startswith(start)), "")


def final_words(lines: list[str]) -> str:
    """What a rank said about its error: the exception of its last Python traceback, when it printed one (C++
    teardown chatter such as "terminate called without an active exception" or a process-group warning often
    follows it), else its last line."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Traceback (most recent call last):"):
            for line in lines[i + 1 :]:
                if not line[:1].isspace() and not line.startswith(("During handling", "The above")):
                    return line.strip()
            break
    rest = [ln.strip() for ln in lines if not ln.startswith("Traceback")]
    return rest[-1] if rest else ""


def _others_said(ranks_dir: str, node: int, rank: int, procs_per_node: int, starting: str = "") -> str:
    """Words of the main process, then of the node's other ranks, named as theirs (the last line, or with
    `starting` the last line that starts so)."""
    runs_dir = os.path.dirname(os.path.normpath(ranks_dir))
    candidates = [(os.path.join(runs_dir, "node0.ranks"), 0, 0)]
    candidates += [(ranks_dir, lr, node * procs_per_node + lr) for lr in range(procs_per_node)]
    for where, local_rank, global_rank in candidates:
        if global_rank != rank and os.path.isdir(where):
            said = _said(where, local_rank, starting) if starting else final_words(_said(where, local_rank))
            if said:
                return f"rank {global_rank} said: {said}"
    return ""


_WORKER_PREFIX = re.compile(r"^\[node\d+/rank(\d+)\] ")


def explained_elsewhere(failure: Failure, known: dict, logs: list[str]) -> Failure:
    """For backends whose ranks' teed files stay on the hosts (SSH): every node's streamed log here. When the
    failing rank exited with a known code without saying why (a collective refusal), the lowest rank's last
    line that starts with the code's meaning becomes its words, named as whose it is; as `summarize` does from
    the rank files."""
    start = known.get(failure.code)
    if start is None or failure.last_line.startswith(start):
        return failure
    said = {}
    for text in logs:
        for line in text.splitlines():
            tagged = _WORKER_PREFIX.match(line)
            if tagged and line[tagged.end() :].strip().startswith(start):
                said[int(tagged.group(1))] = line[tagged.end() :].strip()
    if not said:
        return failure
    rank = min(said)
    words = said[rank] if rank == failure.rank else f"rank {rank} said: {said[rank]}"
    return dataclasses.replace(failure, last_line=words)


def read_log(path: str) -> str:
    """A log as text, or "" when it was never written (newline="": a progress redraw's "\r" stays visible)."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            return f.read()
    except OSError:
        return ""


def known_codes(argv) -> dict:
    """The training module's exit codes mean something; another program's are just numbers. The entrypoint is the
    last `-m` of the launch words (after `-m accelerate.commands.launch` / `torch.distributed.run`, or alone in a
    one-process node's `python -m train`)."""
    modules = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w == "-m"]
    return TRAIN_EXIT_CODES if modules[-1:] == [TRAIN_MODULE] else {}


def restartable(state: Optional[str], f: Optional[Failure]) -> bool:
    """A failure that is not the job's own verdict: a node lost, a world that did not form, a hang, a rank killed
    by a signal, a rank asking to be requeued (75). A job that refused (its own exit codes: bad configuration,
    data, resume) or was cancelled is never started again."""
    if state not in (RunState.FAILED, RunState.PREEMPTED) or f is None:
        return False
    if f.meaning in (LOST, NEVER_JOINED, HUNG, NOT_STARTED) or f.code == PREEMPTED:
        return True
    return f.code > 128 and f.code - 128 in signal.Signals._value2member_map_


def cause(f: Failure) -> str:
    """Why a run failed, in one line: `node 1 (n2) rank 3 exited 4 (bad data): <its last words>`."""
    who = f"node {f.node} ({f.host})" + (f" rank {f.rank}" if f.rank is not None else "")
    tail = f": {f.last_line}" if f.last_line else ""
    if f.meaning in (LOST, NEVER_JOINED):
        return f"{who} {f.meaning}{tail}"
    if f.meaning == HUNG:
        return f"the run hung{tail}"
    if f.meaning == NOT_STARTED:
        return f"its nodes never started{tail}"
    if f.meaning.startswith("killed by "):
        # Not "exited 137": the rank did not exit, something killed it; SIGKILL is what the OOM killer sends.
        hint = OOM_HINT if f.meaning == "killed by SIGKILL" else ""
        return f"{who} {f.meaning} (exit code {f.code}{hint}){tail}"
    # An unknown code has no meaning to add: "exited 4", not "exited 4".
    plain = f.meaning == f"exit code {f.code}"
    return f"{who} exited {f.code}{'' if plain else f' ({f.meaning})'}{tail}"


def summary_line(run_id: str, state: str, f: Failure) -> str:
    return f"kit: run {run_id} {state}: {cause(f)}"


def outcome_level(state: str) -> int:
    """How loud a run's last line is (launcher/logs.py): a success is news (INFO); any other end stays visible with
    -q (a failure an ERROR, a cancelled or preempted run a WARNING)."""
    import logging

    if state == RunState.SUCCEEDED:
        return logging.INFO
    return logging.ERROR if state == RunState.FAILED else logging.WARNING


def outcome_line(run_id: str, state: str, code: int, failure: Optional[Failure]) -> str:
    """The last line of a run: how it ended and, when it failed, why, in one line."""
    if failure is not None:
        return summary_line(run_id, state, failure)
    if state == RunState.CANCELLED:
        return f"kit: run {run_id} cancelled (exit code {code}); no process of it is left"
    return f"kit: run {run_id} {state} (exit code {code})"
