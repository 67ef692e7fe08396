"""The ``wattsched`` command line. Only this package parses arguments.

Each command group lives in its own module exposing ``add_parser(subparsers)``; the parser's ``func``
default runs the command and returns an exit status. Errors a user can cause print one line and exit 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from wattsched.cli._parsing import OneLineErrorParser
from wattsched.errors import WattschedError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from wattsched.cli import cluster, dvfs, gpu, measure, mig, plot, report, reproduce, sweep

    parser = OneLineErrorParser(
        prog="wattsched", description="Energy-aware scheduling of AI/ML work on GPUs."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    groups = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=OneLineErrorParser
    )
    mig.add_parser(groups)
    dvfs.add_parser(groups)
    reproduce.add_parser(groups)
    plot.add_parser(groups)
    report.add_parser(groups)
    gpu.add_parser(groups)
    measure.add_parser(groups)
    cluster.add_parser(groups)
    sweep.add_parser(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(message)s")
    try:
        return int(args.func(args) or 0)
    except WattschedError as exc:
        print(f"wattsched: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError,
            PermissionError) as exc:
        print(f"wattsched: error: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("wattsched: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
