"""`wattsched reproduce` commands."""

from __future__ import annotations

import argparse

__all__ = ["add_parser"]


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = groups.add_parser("reproduce", help="reproduce commands")
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
