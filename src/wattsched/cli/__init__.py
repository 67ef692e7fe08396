# PYTHON_ARGCOMPLETE_OK (argcomplete's global completion looks for this marker in the entry point's module)
"""The ``wattsched`` command line. Only this package parses arguments.

Each command lives in its own module exposing ``add_parser(subparsers)``; the parser's ``func`` default runs
the command and returns an exit status. The top-level commands are listed in :data:`COMMANDS`: only the module
of the command the command line names is imported (the others get their name and help line), so
``wattsched --help`` and ``wattsched mig run`` import only what they use. Errors a user can cause print one
line and exit 2; an unexpected exception prints one line naming a crash report and exits 1 (``--debug`` shows
the traceback instead). ``-v``/``-q``/``--debug`` are accepted anywhere before a ``--``, and so is
``--plugin MODULE`` (repeatable): each module is imported before the command line is parsed, so the names
it registers (policies, partitioners, placements, GPUs) are known to every command. ``wattsched --help``
lists the commands in the groups of :data:`COMMAND_GROUPS`. Tab completion (argcomplete, ``wattsched
completion SHELL``) builds the parser of the command being typed only while the shell asks for completions.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from wattsched.cli._parsing import (
    Command,
    CommandGroups,
    OneLineErrorParser,
    add_commands,
    split_global_flags,
    split_plugins,
)
from wattsched.errors import WattschedError

__all__ = ["COMMANDS", "COMMAND_GROUPS", "build_parser", "main"]

#: The top-level commands: name, one-line help, the module whose ``add_parser(subparsers)`` builds it.
COMMANDS: tuple[Command, ...] = (
    Command("mig", "MIG scheduling: generate traces, simulate, repartition", "wattsched.cli.mig"),
    Command("dvfs", "DVFS-aware deadline scheduling on CPU-GPU clusters (P2)", "wattsched.cli.dvfs"),
    Command("cluster", "a data centre of MIG GPUs: run, import a public trace", "wattsched.cli.cluster"),
    Command(
        "import",
        "turn your job log (CSV, sacct) or a public trace into a trace",
        "wattsched.cli.trace_import",
    ),
    Command(
        "sweep",
        "run the cross product of a sweep file (GPUs, configurations, policies, ...) into one table",
        "wattsched.cli.sweep",
    ),
    Command(
        "advise",
        "compare every way to run a cluster's GPUs on a trace and recommend one within a tardiness budget",
        "wattsched.cli.advise",
    ),
    Command("reproduce", "reproduce the papers' tables and figures", "wattsched.cli.reproduce"),
    Command("plot", "publication figures of a sweep directory or a run file", "wattsched.cli.plot"),
    Command(
        "report",
        "write DIR/index.html: an interactive, offline page of a reproduce or sweep directory",
        "wattsched.cli.report",
    ),
    Command("slurm", "schedule the jobs of a real Slurm partition on MIG slices", "wattsched.cli.slurm"),
    Command("gpu", "real GPUs through NVML: info, record, snapshot, calibrate", "wattsched.cli.gpu"),
    Command(
        "measure", "run a command and report its GPU energy (NVML energy counter)", "wattsched.cli.measure"
    ),
    Command(
        "schema",
        "describe the files wattsched reads and writes (trace, tasks, sweep, ...)",
        "wattsched.cli.schema",
    ),
    Command(
        "completion", "print the shell code of tab completion (bash, zsh, fish)", "wattsched.cli.completion"
    ),
)

#: How ``wattsched --help`` groups the commands: each command of :data:`COMMANDS` is in exactly one group.
COMMAND_GROUPS: CommandGroups = (
    ("Simulate and compare", ("mig", "cluster", "dvfs", "sweep", "advise", "reproduce")),
    ("Data", ("import", "schema")),
    ("Results", ("report", "plot")),
    ("Real hardware", ("gpu", "measure", "slurm")),
    ("Shell", ("completion",)),
)


def version() -> str:
    """The installed package's version (``wattsched.__version__`` when running from a bare source tree)."""
    from importlib import metadata

    try:
        return metadata.version("wattsched")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        from wattsched import __version__

        return __version__


def build_parser(argv: Sequence[str] | None = None) -> OneLineErrorParser:
    """The ``wattsched`` parser. ``argv`` (global flags removed) selects the one command built in full;
    ``None`` builds every command (tests and documentation walk the whole tree)."""
    parser = OneLineErrorParser(
        prog="wattsched",
        description="Energy-aware scheduling of AI/ML work on GPUs. 'wattsched COMMAND --help' describes a "
        "command; -v, -q, --debug and --plugin may stand anywhere on the command line.",
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log progress details to stderr (-vv: debug)"
    )
    parser.add_argument("-q", "--quiet", action="count", default=0, help="print errors only, no warnings")
    parser.add_argument(
        "--debug", action="count", default=0, help="show the traceback of an unexpected error"
    )
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (a module name, or a .py file): the policies, partitioners, placements "
        "and GPUs it registers can then be named; repeatable, accepted anywhere on the command line",
    )
    add_commands(parser, COMMANDS, argv, COMMAND_GROUPS)
    return parser


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked for (importlib.metadata costs start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        sys.stdout.write(f"wattsched {version()}\n")
        parser.exit(0)


class _OneLine(logging.Formatter):
    """``wattsched: warning: message`` (one line, level in lower case)."""

    def format(self, record: logging.LogRecord) -> str:
        lines = record.getMessage().splitlines()
        return f"wattsched: {record.levelname.lower()}: {lines[0] if lines else ''}"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _configure_logging(verbose: int, quiet: int) -> tuple[int, bool]:
    """Records of the ``wattsched`` loggers go to stderr, one line each: warnings by default, info with
    ``-v``, debug with ``-vv``, errors only with ``-q``. Returns the logger's previous level and
    propagation, which :func:`main` restores."""
    level = logging.WARNING
    if quiet:
        level = logging.ERROR
    elif verbose:
        level = logging.DEBUG if verbose > 1 else logging.INFO
    logger = logging.getLogger("wattsched")
    previous = (logger.level, logger.propagate)
    handler = _StderrHandler()
    handler.setFormatter(_OneLine())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False  # the root logger's handlers (if any) would print the record again
    return previous


def _restore_logging(previous: tuple[int, bool]) -> None:
    logger = logging.getLogger("wattsched")
    for handler in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(handler)
    logger.setLevel(previous[0])
    logger.propagate = previous[1]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``wattsched argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    if argv is None and "_ARGCOMPLETE" in os.environ:
        _complete()
    _bind_closed_streams()
    raw = list(sys.argv[1:] if argv is None else argv)
    rest, flags = split_global_flags(raw)
    rest, modules = split_plugins(rest)
    previous = _configure_logging(flags["verbose"], flags["quiet"])
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _dispatch(rest, raw, flags["debug"], modules)
    finally:
        _restore_logging(previous)


def _bind_closed_streams() -> None:
    """A program started with its standard output or error closed (Slurm runs ``SuspendProgram`` and
    ``ResumeProgram`` so) has ``sys.stdout``/``sys.stderr`` set to ``None``: write those to the null device
    rather than fail on the first line of output."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - for the process's life


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A library warning as one stderr line, like the log records (``-q`` hides it)."""
    del category, filename, lineno, file, line
    logging.getLogger("wattsched").warning("%s", message)


def _complete() -> None:
    """Answer the shell's completion request (argcomplete sets ``_ARGCOMPLETE``, ``COMP_LINE`` and
    ``COMP_POINT``) and exit. Only the command being typed is built in full, as for a normal run."""
    import argcomplete  # imported only while completing: it is not needed, nor paid for, by a run

    line = os.environ.get("COMP_LINE", "")
    try:
        point = int(os.environ.get("COMP_POINT", len(line)))
        words: list[str] | None = shlex.split(line[:point])[1:]
    except ValueError:  # an open quote or a bad COMP_POINT: build every command
        words = None
    argcomplete.autocomplete(build_parser(None if words is None else split_global_flags(words)[0]))


def _dispatch(rest: list[str], raw: list[str], debug: int, modules: Sequence[str] = ()) -> int:
    """Load the ``--plugin`` modules, parse and run ``rest``; map the errors of a run to one stderr line and
    an exit status."""
    try:
        if modules:
            from pathlib import Path

            from wattsched.plugins import load_plugins

            load_plugins(modules, base=Path.cwd(), where="--plugin")
        args = build_parser(rest).parse_args(rest)
        return int(args.func(args) or 0)
    except WattschedError as exc:
        print(f"wattsched: error: {exc}", file=sys.stderr)
        return 2
    except (
        FileNotFoundError,
        FileExistsError,
        IsADirectoryError,
        NotADirectoryError,
        PermissionError,
    ) as exc:
        print(f"wattsched: error: {exc.filename}: {_os_reason(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("wattsched: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `wattsched ... | head`: stop quietly
        return 141
    except Exception as exc:
        if debug:
            raise
        return _report_crash(exc, raw)


def _report_crash(exc: Exception, argv: list[str]) -> int:
    """One line naming the crash report of ``exc``; exit status 1."""
    from wattsched.cli._crash import write_crash_report

    try:
        where = f"crash report: {write_crash_report(exc, argv, version())}"
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
