"""Checks kit makes on this machine before anything starts, the same for `--dry-run` as for a run: the `secret_env`
variables are set, and, where the nodes' code can be read from here (the code_dir of the backend's Placement.at_edge),
the entrypoint is there and compiles, the modules it imports from beside it are among the files sync copies, a
DeepSpeed job on CPU asks for the gloo process group, and the reference job (`python -m train`) accepts its
arguments (its own parser, which imports no torch). One line naming the file and the fix, exit code 2."""

import os
import re
import subprocess
import sys
from itertools import chain
from typing import Iterable, Optional

from launcher.environment import missing_secrets
from launcher.errors import KitError, Option
from launcher.planning.model import LaunchPlan, SyncPlan
from launcher.preflight.source import Source, compile_file, entry_file, local_modules

# How a program asks for the gloo process group: any mention of it (InitProcessGroupKwargs(backend="gloo"),
# init_process_group("gloo"), a --backend gloo argument, or a comment saying it is handled); and what makes
# accelerate set up DeepSpeed's process group itself.
_GLOO = re.compile(r"\bgloo\b")
_ACCELERATOR = re.compile(r"\bAccelerator\s*\(")


def check_here(plan: LaunchPlan, entrypoint, args, code_dir: Optional[str], environ) -> None:
    """`entrypoint`: the job's (module, script); `args`: the job's arguments; `code_dir`: where this machine sees
    the nodes' workdir, or None when it cannot."""
    missing = missing_secrets(plan.nodes[0], environ)
    if missing:
        raise KitError(f"secret_env: {', '.join(missing)} not set in your environment; export it first")
    if code_dir is None or not os.path.isdir(code_dir):
        return
    entry = _entry(plan.sync, code_dir, entrypoint)
    if entry is None:
        return  # a module installed on the nodes, or a script sync does not carry: the nodes' checks look
    if entrypoint.module == TRAIN_MODULE:
        _check_train_args(code_dir, args)
    deepspeed_on_cpu = plan.world.strategy == "deepspeed" and plan.world.device == "cpu"
    if plan.sync is None and not deepspeed_on_cpu:
        return  # what follows reads every module of the job's own: only where it matters
    search = [os.path.dirname(os.path.join(code_dir, entry.rel))] if entrypoint.script else [code_dir]
    imported: Iterable[Source] = local_modules(code_dir, entry, search)  # a list once synced code reads it
    if plan.sync is not None:
        imported = list(imported)
        _check_synced(plan.sync, code_dir, entrypoint, imported)
    if deepspeed_on_cpu:
        _check_gloo(entry, imported, args)


# The reference job's own parser, as the nodes will run it (the code kit sees here): argparse's usage and error on
# stderr, exit code 2, for arguments it refuses. train/args.py imports no torch: this takes ~0.1 s.
TRAIN_MODULE = "train"
_TRAIN_ARGS = "train/args.py"
_PARSE = "import sys\nfrom train.args import parse_args\nparse_args(sys.argv[1:])\n"


def _check_train_args(code_dir: str, args) -> None:
    """Arguments `python -m train` refuses fail here, once, not once per rank after the launch (issue 41)."""
    if not os.path.isfile(os.path.join(code_dir, _TRAIN_ARGS)) or any(a in ("-h", "--help") for a in args):
        return
    try:
        r = subprocess.run(
            [sys.executable, "-c", _PARSE, *args],
            cwd=code_dir,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": code_dir},
        )
    except (OSError, subprocess.TimeoutExpired):
        return  # not told from here: the nodes' own parser says
    said = [ln for ln in r.stderr.splitlines() if ": error: " in ln]
    if r.returncode == 2 and said:
        error = said[-1].split(": error: ", 1)[1]
        raise KitError(f"args: python -m train refuses them: {error}; see `python -m train --help`")


def _entry(sync: Optional[SyncPlan], code_dir: str, entrypoint) -> Optional[Source]:
    """The entrypoint's file, compiled; None when it cannot be told from here."""
    rel = entry_file(code_dir, entrypoint.script, entrypoint.module)
    if rel is None:
        return None
    path = os.path.normpath(os.path.join(code_dir, rel))
    if sync is not None and not path.startswith(os.path.join(sync.source, "")):
        return None  # outside the sync source: expected on the hosts already
    if not os.path.isfile(path):
        where = (
            f"sync.source {sync.source}, which each host's workdir gets"
            if sync is not None
            else f"the node's workdir {code_dir}"
        )
        raise KitError(
            f"entrypoint.script {entrypoint.script}: no such file in {where}; a relative script path "
            f"is taken from the workdir"
        )
    role = "the job's script" if entrypoint.script else f"the job's module {entrypoint.module}"
    return compile_file(code_dir, rel, entrypoint.module, role)


def _check_synced(sync: SyncPlan, code_dir: str, entrypoint, imported) -> None:
    """A module of the user's that the entrypoint imports, but sync leaves behind (a file git does not track, one
    excluded), would be missing on the hosts: the run would fail there with an ImportError."""
    entry = entrypoint.script or entrypoint.module
    for module in imported:
        rel = os.path.relpath(os.path.join(code_dir, module.rel), sync.source).replace(os.sep, "/")
        if rel.startswith("../") or rel in sync.files:
            continue
        if sync.chosen_by.startswith("the git-tracked"):
            how = f"git add {rel}, or list it in sync.include"
        elif sync.chosen_by.startswith("the files matching"):
            how = "list it in sync.include"
        else:
            how = "drop the sync.exclude rule that leaves it out"
        if "less .kitignore" in sync.chosen_by:
            how += " (or the .kitignore rule, if one leaves it out)"
        elif ".kitignore" in sync.chosen_by:
            how += " (or, if the defaults leave it out, write a .kitignore)"
        raise KitError(
            f"sync: {rel} (module {module.module}, imported by {entry}) is not among the files sync "
            f"copies from {sync.source} ({sync.chosen_by}); {how}, or the hosts will not have it"
        )


def _check_gloo(entry: Source, imported: Iterable[Source], args) -> None:
    """accelerate + DeepSpeed on CPU forms one world only when the program asks for the gloo process group (README:
    Your own script); without it the ranks fail after minutes, in dozens of lines. Refused: a program whose own
    code (the entrypoint and the modules of its own it imports) builds an `Accelerator` and nowhere says `gloo`,
    nor do its arguments. A program that builds none (plain torch.distributed picks gloo on CPU itself) passes."""
    if any(_GLOO.search(word) for word in args):
        return
    builds = None
    for source in chain([entry], imported):
        if _GLOO.search(source.text):
            return
        builds = builds or (_ACCELERATOR.search(source.text) and source)
    if builds:
        where = entry.rel if builds is entry else f"{entry.rel} (through {builds.rel})"
        raise KitError(
            f"strategy deepspeed on CPU nodes: {where} builds an Accelerator but never asks for the gloo "
            f"process group, without which DeepSpeed's ranks do not form one world; pass Accelerator("
            f'kwargs_handlers=[InitProcessGroupKwargs(backend="gloo")]) (README: Your own script), or '
            "use ",
            Option("strategy", "ddp"),
            " or GPUs",
        )
