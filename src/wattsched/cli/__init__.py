"""The ``wattsched`` command line. Only this package parses arguments.

Commands are declared in tables (:data:`COMMANDS`, and ``COMMANDS`` of each group module); a command's
options are built only when the command line names it (:func:`wattsched.cli._parsing.add_commands`), so the
start-up imports only what the command uses. Each leaf command sets ``func``, which runs it and returns an exit
status. Errors a user can cause print one line and exit 2; an unexpected exception prints one line naming a
crash report and exits 1 (``--debug`` shows the traceback instead). ``-v``/``-q``/``--debug`` are accepted
anywhere before a ``--``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from wattsched.cli._parsing import Command, OneLineErrorParser, add_commands, split_global_flags
from wattsched.errors import WattschedError

__all__ = ["COMMANDS", "build_parser", "main"]

#: The top-level commands (name, help, where they are configured).
COMMANDS: tuple[Command, ...] = (
    Command("mig", "MIG scheduling: generate traces, simulate, repartition", "wattsched.cli.mig:COMMANDS"),
    Command(
        "dvfs", "DVFS-aware deadline scheduling on CPU-GPU clusters (P2)", "wattsched.cli.dvfs:COMMANDS"
    ),
    Command(
        "sweep",
        "run the cross product of a sweep file (GPUs, configurations, policies, ...) into DIR/runs.parquet",
        "wattsched.cli.sweep:configure",
        "Run every combination of the lists in a sweep file (see 'wattsched schema sweep') and write "
        "DIR/runs.parquet (one row per run, with ET over the sweep's pool), DIR/sweep.json (the pool, the "
        "axes, the code version) and, with --csv, DIR/runs.csv. A re-run into the same DIR reuses every run "
        "whose inputs and code are unchanged.",
    ),
    Command(
        "reproduce",
        "reproduce the papers' tables and figures",
        "wattsched.cli.reproduce:configure",
        "Run every registered study (or --only some) and write DIR/report.md, DIR/figures/*.png, "
        "DIR/raw/<study>.parquet, DIR/summary.json and DIR/index.html (interactive, offline). A re-run into "
        "the same DIR skips finished cells.",
    ),
    Command(
        "plot",
        "publication figures of a sweep directory or a run file",
        "wattsched.cli.plot:configure",
        "SWEEP_DIR: grouped bars per metric with 95 % intervals over seeds, grouped by the columns that vary "
        "(written to SWEEP_DIR/figures by default). RUN_FILE (from 'mig run --timeline-out'): a Gantt of "
        "slice placements and the power/energy over time (written beside it).",
    ),
    Command(
        "report",
        "write DIR/index.html: an interactive, offline page of a reproduce or sweep directory",
        "wattsched.cli.report:configure",
        "Write DIR/index.html: one self-contained file (plotly.js and every figure inlined, no network "
        "request) with every table and figure of a 'reproduce' directory (report.md's sections, "
        "summary.json, interactive views of raw/*.parquet) and/or a sweep directory (runs.parquet).",
    ),
    Command("gpu", "real GPUs through NVML: info, record, snapshot, calibrate", "wattsched.cli.gpu:COMMANDS"),
    Command(
        "measure",
        "run a command and report its GPU energy (NVML energy counter)",
        "wattsched.cli.measure:configure",
    ),
    Command(
        "schema",
        "print the columns or keys of a file wattsched reads or writes (trace, tasks, sweep, ...)",
        "wattsched.cli.schema:configure",
    ),
)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("wattsched")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        from wattsched import __version__

        return __version__


def build_parser(argv: Sequence[str] | None = None) -> OneLineErrorParser:
    """The ``wattsched`` parser. ``argv`` (global flags removed) selects the one command built in full;
    ``None`` builds every command."""
    parser = OneLineErrorParser(
        prog="wattsched",
        description="Energy-aware scheduling of AI/ML work on GPUs. 'wattsched COMMAND --help' describes a "
        "command; -v, -q and --debug may stand anywhere on the command line.",
    )
    parser.add_argument("--version", action="version", version=f"wattsched {_version()}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log progress details to stderr (-vv: debug)"
    )
    parser.add_argument("-q", "--quiet", action="count", default=0, help="print errors only, no warnings")
    parser.add_argument(
        "--debug", action="count", default=0, help="show the traceback of an unexpected error"
    )
    add_commands(parser, COMMANDS, argv)
    return parser


class _OneLine(logging.Formatter):
    """``wattsched: warning: message`` (one line, level in lower case)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage().splitlines()[0] if record.getMessage() else ""
        return f"wattsched: {record.levelname.lower()}: {message}"


def _configure_logging(verbose: int, quiet: int) -> None:
    """Log records of the ``wattsched`` loggers go to the current stderr, one line each."""
    level = logging.WARNING
    if quiet:
        level = logging.ERROR
    elif verbose:
        level = logging.DEBUG if verbose > 1 else logging.INFO
    logger = logging.getLogger("wattsched")
    for handler in [h for h in logger.handlers if getattr(h, "wattsched_cli", False)]:
        logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.wattsched_cli = True  # type: ignore[attr-defined]
    handler.setFormatter(_OneLine())
    logger.addHandler(handler)
    logger.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``wattsched argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    raw = list(sys.argv[1:] if argv is None else argv)
    rest, flags = split_global_flags(raw)
    _configure_logging(flags["verbose"], flags["quiet"])
    try:
        args = build_parser(rest).parse_args(rest)
        return int(args.func(args) or 0)
    except WattschedError as exc:
        print(f"wattsched: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError,
            PermissionError) as exc:
        print(f"wattsched: error: {exc.filename}: {_os_reason(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("wattsched: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `wattsched ... | head`: stop quietly
        sys.stderr.close()
        return 141
    except Exception as exc:
        if flags["debug"]:
            raise
        from wattsched.cli._crash import write_crash_report

        try:
            where = f"crash report: {write_crash_report(exc, raw, _version())}"
        except OSError as failed:
            where = f"no crash report ({failed.strerror or failed})"
        summary = (str(exc).splitlines() or [""])[0]
        print(
            f"wattsched: internal error: {type(exc).__name__}: {summary} (a bug; {where}; --debug shows the "
            "traceback)",
            file=sys.stderr,
        )
        return 1


def _os_reason(exc: OSError) -> str:
    """The reason of a file error, naming what the path is when that is the problem."""
    if isinstance(exc, IsADirectoryError):
        return "is a directory, expected a file"
    if isinstance(exc, NotADirectoryError):
        return "a part of the path is not a directory"
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory"
    return str(exc.strerror or exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
