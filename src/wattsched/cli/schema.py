"""`wattsched schema [NAME]`: the columns and keys of the files wattsched reads and writes."""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_parser"]


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = groups.add_parser(
        "schema",
        help="describe the files wattsched reads and writes (trace, tasks, sweep, ...)",
        description="Print the columns (tables) or keys (sweep files) of a file kind, with units and rules. "
        "Without NAME: the list of kinds.",
    )
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="trace, tasks, settings, jobs, timeline or sweep (default: list them)",
    )
    parser.set_defaults(func=_schema)


def _schema(args: argparse.Namespace) -> int:
    from wattsched.schemas import SCHEMAS, schema_text

    if args.name is None:
        width = max(map(len, SCHEMAS))
        sys.stdout.write("".join(f"{name:<{width}}  {summary}\n" for name, (summary, _) in SCHEMAS.items()))
        return 0
    sys.stdout.write(schema_text(args.name))
    return 0
