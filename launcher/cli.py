"""kit's command line. Imports nothing heavy: --help and --dry-run stay fast."""

import argparse
import os
import sys

from launcher.errors import KitError, did_you_mean, render

FORMATS = ("text", "json")
RUN_ROOT_HELP = (
    "only the records under this directory (default: every run in kit's index, $KIT_HOME or ~/.kit, and ./runs)"
)
PREFIX_HELP = "its first characters will do when no other run begins so"
COMMANDS = ("submit", "status", "logs", "cancel", "runs", "wait", "doctor", "sweep", "report", "hosts")


class UsageError(KitError):
    """A command-line mistake; at the top level the usage is shown above the one error line."""

    def __init__(self, message: str, usage: str = ""):
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        # `--node 2` must not silently mean `--nodes 2`.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        if self.prog == "kit":
            if "required: command" in message:
                message = f"no command given; choose one of {', '.join(COMMANDS)} (kit --help)"
            # One usage line, however many commands there are: usage, then the one error line.
            raise UsageError(message, " ".join(self.format_usage().split()) + "\n")
        # A subcommand's mistake stays one line, exit code 2, like every other user error.
        raise UsageError(f"{message} (see {self.prog} --help)")


def _submit_args(sub) -> None:
    p = sub.add_parser(
        "submit",
        help="plan a job on a cluster and run it (or print the plan with --dry-run)",
        usage="kit submit (JOB.yaml | SCRIPT.py | -m MODULE) [options] [-- ARGS...]",
        epilog="ARGS after -- are appended to the job's arguments, e.g. "
        "kit submit train.py --nodes 2 -- --lr 3e-4. In a job file, entrypoint: train.py is "
        "short for entrypoint: {script: train.py}, and entrypoint: -m pkg.train for "
        "{module: pkg.train}. A job file's mistakes are listed together, one a line. "
        "A sweep's trial N gets --output-dir outputs/<sweep>-tN (sweep.output_arg, "
        "output_root) as its last arguments, and must "
        "write metrics.json (sweep.metrics_file) there, from one process on node 0; "
        "sweep.metric is a path into it: names index objects, integers lists "
        "(evals.-1.accuracy = data['evals'][-1]['accuracy']), leading to a number. A sweep "
        "stops launching trials after sweep.max_failures (default 3) in a row fail the "
        "same way.",
    )
    p.add_argument(
        "job",
        nargs="?",
        help="job spec YAML (jobs/bert_cls.yaml), or a Python script to run as a job built from the flags (train.py)",
    )
    p.set_defaults(args=[])  # the words after `--` (parse() splits them off)
    p.add_argument("-m", "--module", help="run a Python module (python -m MODULE) as a job built from the flags")
    p.add_argument(
        "--cluster", help=f"cluster config YAML (default: this machine); backends: {_backends(described=True)}"
    )
    p.add_argument("--nodes", type=int, help="number of nodes")
    p.add_argument("--gpus", type=int, help="GPUs per node (0: a CPU job)")
    p.add_argument("--procs-per-node", type=int, help="processes per node on CPU nodes")
    p.add_argument("--strategy", help="ddp | deepspeed | fsdp")
    p.add_argument("--mixed-precision", help="no | fp16 | bf16")
    p.add_argument("--port", type=int, help="rendezvous port (default: derived from the run id)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a job field (deepspeed.zero_stage=3) or a cluster field (cluster.workdir=/x)",
    )
    p.add_argument(
        "--run-id",
        help="run id (default: <job>-<time>-<random>; a sweep's: <job>-sweep-<hash of "
        "the sweep>, so the same sweep run again continues it)",
    )
    p.add_argument(
        "--sweep",
        metavar="FILE",
        help="run a hyperparameter sweep described in FILE (or in the job's sweep: section): one run per trial",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan; start and write nothing")
    p.add_argument(
        "--attempt",
        type=int,
        metavar="K",
        help="with --dry-run: the plan of attempt K, a restart (the job's restarts): its fresh master port and hosts",
    )
    p.add_argument(
        "--node",
        type=int,
        metavar="K",
        help="with --dry-run: print node K in full (the dry-run shows "
        "node 0 in full and what differs for the others as a rule)",
    )
    # No default: a --format given without --dry-run is an error, not a real run.
    p.add_argument("--format", choices=FORMATS, help="dry-run output format (default: text); needs --dry-run")
    p.add_argument(
        "--detach",
        action="store_true",
        help="return at once; the run goes on in the background (see kit status/logs/cancel)",
    )


def _record_args(sub) -> None:
    for name, help_ in (
        ("status", "show a run's state and exit codes"),
        ("logs", "print a run's node logs"),
        ("cancel", "stop every process of a run"),
    ):
        p = sub.add_parser(name, help=help_)
        p.add_argument(
            "run_id",
            nargs="?" if name != "cancel" else None,
            help=f"run id{' (default: the latest run)' * (name != 'cancel')}; {PREFIX_HELP}",
        )
        p.add_argument("--run-root", help=RUN_ROOT_HELP)
        _trust_arg(p)
        if name == "status":
            p.add_argument(
                "--json",
                action="store_true",
                help="the same as data: state, exit_code, failure, attempts, nodes, hosts, times",
            )
        if name == "logs":
            p.add_argument("--node", type=int, help="only this node's log")
            p.add_argument("--rank", type=int, help="only this rank's lines (its global rank)")
            p.add_argument("--tail", type=int, metavar="N", help="only the last N lines of each log")
            p.add_argument("--follow", action="store_true", help="keep printing new lines until the run ends")
    p = sub.add_parser("runs", help="list your runs, newest first (any backend, started from any directory)")
    p.add_argument("--run-root", help=RUN_ROOT_HELP)
    _trust_arg(p)
    p.add_argument("--state", help="only runs in this state (running, succeeded, failed, cancelled, lost, ...)")
    p.add_argument("--backend", help=f"only runs of this backend ({_backends()}) or sweeps (sweep)")
    p.add_argument(
        "--since",
        metavar="WHEN",
        help="only runs started since WHEN: 30m, 6h, 2d, or a date (2026-12-01 or '2026-12-01 08:00')",
    )
    page = p.add_mutually_exclusive_group()
    page.add_argument("--limit", type=int, metavar="N", help="show the newest N runs (default 50)")
    page.add_argument("--all", action="store_true", help="show every run")


def _trust_arg(p) -> None:
    p.add_argument(
        "--trust-owner",
        action="append",
        default=[],
        metavar="USER",
        help="act on this user's records too (log in, copy logs, signal): by default kit acts only on "
        "records that are yours and writable by nobody else",
    )


def _wait_args(sub) -> None:
    p = sub.add_parser(
        "wait",
        help="block until a run ends; exit with its exit code (a signal N as 128+N)",
        epilog="exit codes: the run's (its failing rank's own code, a signal N as 128+N, 0 when it "
        "succeeded); 255 when it was lost (its supervising kit died); 254 when --timeout ran "
        "out; 2 with a kit: error line for a mistake in what was asked, 74 for a record kit cannot read, 69 when "
        "the scheduler refused or did not answer",
    )
    p.add_argument("run_id", nargs="?", help=f"run id (default: the latest run); {PREFIX_HELP}")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="give up after S seconds: exit code 254, the run goes on (inf: wait for ever, as without it)",
    )
    p.add_argument("--run-root", help=RUN_ROOT_HELP)
    _trust_arg(p)


def _backends(described: bool = False, doctor: bool = False) -> str:
    """The installed backends as the help names them, `described` in their own words, or with `doctor` those kit
    doctor checks, with what it checks there (each backend's package says, backends/registry.py)."""
    from launcher.backends import registry

    if doctor:
        return "; ".join(
            f"{name}: {registry.doctor_text(name)}" for name in registry.names() if registry.doctor_text(name)
        )
    return ", ".join(f"{name} ({registry.help_text(name)})" if described else name for name in registry.names())


def _doctor_args(sub) -> None:
    p = sub.add_parser("doctor", help=f"check that a cluster can run jobs ({_backends(doctor=True)})")
    p.add_argument("--cluster", required=True, help="cluster config YAML (a cluster of a backend kit doctor checks)")
    p.add_argument(
        "--job",
        help="job spec YAML, or a Python script (train.py) as kit submit takes it: also check "
        "that its entrypoint is there on every host",
    )
    p.add_argument("-m", "--module", help="or a module (python -m MODULE), as kit submit -m takes it")
    p.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")


def _sweep_args(sub) -> None:
    p = sub.add_parser("sweep", help="hyperparameter sweeps (start one with kit submit JOB --sweep FILE)")
    actions = p.add_subparsers(dest="sweep_command", metavar="status", required=True, parser_class=_Parser)
    s = actions.add_parser("status", help="one table of a sweep's trials: parameters, state, metric; best marked")
    s.add_argument("sweep_id", nargs="?", help="sweep id (default: the latest sweep)")
    s.add_argument("--run-root", help=RUN_ROOT_HELP)
    s.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")


def _insight_args(sub) -> None:
    from launcher.commands import hosts, runs

    def record_args(p) -> None:
        p.add_argument("--run-root", help=RUN_ROOT_HELP)
        _trust_arg(p)

    runs.add_report_args(sub, record_args)
    _trust_arg(hosts.add_args(sub))  # whose records count besides yours


_BUILDERS = {
    "submit": _submit_args,
    "status": _record_args,
    "logs": _record_args,
    "cancel": _record_args,
    "wait": _wait_args,
    "runs": _record_args,
    "doctor": _doctor_args,
    "sweep": _sweep_args,
    "report": _insight_args,
    "hosts": _insight_args,
}


def build_parser(only=None) -> argparse.ArgumentParser:
    """kit's parser; with `only`, a command's name, just that command's part (the one a command line that
    starts with it uses: building every command's costs ~5 ms at each start)."""
    parser = _Parser(prog="kit", description="Plan and launch multi-node PyTorch training jobs.")
    from launcher import __version__

    parser.add_argument("--version", action="version", version=f"kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    names = [only] if only else list(_BUILDERS)
    for build in dict.fromkeys(_BUILDERS[name] for name in names):  # status, logs, ...: one builder
        build(sub)
    _verbosity(parser, None)
    return parser


_VERBOSITY = ("-v", "--verbose", "-q", "--quiet")


def _verbosity(parser, default) -> None:
    """-v/-q before the command (`kit -q submit ...`) and after it (`kit submit ... -v`), on every (sub)command;
    a command's own default leaves the value given before it alone."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-v",
        "--verbose",
        action="store_const",
        const="verbose",
        dest="verbosity",
        default=default,
        help="also kit's debug lines: the backend, commands run on hosts, polling",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_const",
        const="quiet",
        dest="verbosity",
        default=default,
        help="only kit's warnings and errors (the ranks' output is shown as ever)",
    )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _verbosity(child, argparse.SUPPRESS)


def _split_job_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """`kit submit ... -- ARGS`: everything after the first `--` is the job's, untouched by kit's parser."""
    words = [word for word in argv if word not in _VERBOSITY]  # `kit -q submit ...`
    if words and words[0] == "submit" and "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


def _unrecognized(parser, command: str, extra: list[str]) -> str:
    """`unrecognized arguments` with a did-you-mean for a mistyped option (`--node` -> `--nodes`)."""
    options = [o for action in _command_parser(parser, command)._actions for o in action.option_strings]
    hints, unknown = [], False
    for word in extra:
        name = word.split("=", 1)[0]
        if not name.startswith("-"):
            continue
        if close := did_you_mean(name, options):
            hints.append(f"did you mean {close} for {name}?")
        else:
            unknown = True
    if command == "submit" and (unknown or not hints):
        hints.append("arguments for the job go after --, e.g. kit submit JOB -- --lr 3e-4")
    hint = f"; {'; '.join(hints)}" if hints else ""
    return f"unrecognized arguments: {' '.join(extra)}{hint} (see kit {command} --help)"


def _set_misread(argv: list[str], extra: list[str]):
    """`--set nodes 2` (a space for `=`): argparse takes `nodes` as the value and leaves `2` over. The fix, or None."""
    for i, word in enumerate(argv):
        if word == "--set" and i + 2 < len(argv):
            key, value = argv[i + 1], argv[i + 2]
        elif word.startswith("--set=") and i + 1 < len(argv):
            key, value = word.removeprefix("--set="), argv[i + 1]
        else:
            continue
        if "=" not in key and value in extra:
            return (
                f"--set {key} {value}: --set takes KEY=VALUE; did you mean --set {key}={value}? (see kit submit --help)"
            )
    return None


def _command_parser(parser, command: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def _check_submit(args) -> None:
    if args.module is not None and args.job is not None:
        raise UsageError(f"give a job ({args.job}) or -m {args.module}, not both")
    if args.module is None and args.job is None:
        raise UsageError(
            "no job given: kit submit JOB.yaml, kit submit SCRIPT.py or kit submit -m MODULE (see kit submit --help)"
        )
    if args.attempt is not None and (not args.dry_run or args.attempt < 1):
        raise UsageError(
            f"--attempt {args.attempt} prints the plan of attempt K >= 1 (a restart) and needs "
            f"--dry-run: kit submit JOB --dry-run --attempt 2"
        )
    if args.node is not None and (not args.dry_run or args.node < 0 or args.format == "json"):
        raise UsageError(
            f"--node {args.node} prints node K >= 0 of a dry-run's text and needs --dry-run (not "
            f"--format json, which holds every node): kit submit JOB --dry-run --node 3; the number "
            f"of nodes is --nodes"
        )
    if args.format is not None and not args.dry_run:
        raise UsageError(
            f"--format {args.format} prints a plan and needs --dry-run; add --dry-run, "
            f"or drop --format to start the run"
        )


def parse(argv=None):
    """Parsed arguments; a mistake after the command names that command, in one line."""
    argv = sys.argv[1:] if argv is None else list(argv)
    argv, job_args = _split_job_args(argv)
    command = next((word for word in argv if word not in _VERBOSITY), None)
    command = command if command in _BUILDERS else None
    parser = build_parser(command)
    args, extra = parser.parse_known_args(argv)
    if extra:
        raise UsageError(_set_misread(argv, extra) or _unrecognized(parser, args.command, extra))
    if args.command == "submit":
        _check_submit(args)
        args.args = job_args
    return args


def _console(verbosity) -> None:
    """kit's lines on stderr (launcher/logs.py): INFO; -v adds the debug lines, -q keeps warnings and errors."""
    import logging

    from launcher.logs import setup_console

    setup_console({"verbose": logging.DEBUG, "quiet": logging.WARNING}.get(verbosity, logging.INFO))


def main(argv=None) -> int:
    try:
        args = parse(argv)
        _console(args.verbosity)
        if getattr(args, "trust_owner", None):
            from launcher.trust import trust_owners

            trust_owners(args.trust_owner)
        if args.command == "submit":
            from launcher.commands.submit import submit

            return submit(args)
        if args.command == "sweep":
            from launcher.commands.submit import sweep_status

            return sweep_status(args)
        if args.command == "doctor":
            from launcher.commands.doctor import doctor

            return doctor(args)
        if args.command == "logs":
            from launcher.commands.logs import logs

            return logs(args)
        if args.command == "wait":
            from launcher.commands.wait import wait

            return wait(args)
        if args.command in ("report", "hosts"):
            from launcher.commands import hosts, runs

            return {"report": runs.report, "hosts": hosts.hosts}[args.command](args)
        from launcher.commands import runs

        return {"runs": runs.runs_cmd, "status": runs.status, "cancel": runs.cancel}[args.command](args)
    except KitError as e:
        print(f"{getattr(e, 'usage', '')}kit: error: {render(e)}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:  # before a run exists (its checks, the plan): nothing was started
        print("kit: interrupted; nothing was started", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `kit submit --dry-run | head` is fine.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


__all__ = ["main", "build_parser"]
