"""`wattsched report DIR`: write ``DIR/index.html``, one self-contained interactive page
(docs/howto/figures-report.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_parser"]


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = groups.add_parser(
        "report",
        help="write DIR/index.html: an interactive, offline page of a reproduce or sweep directory",
        description="Write DIR/index.html: one self-contained file (plotly.js and every figure inlined, no "
        "network request) with every table and figure of a `reproduce` directory (report.md's sections, "
        "summary.json, interactive views of raw/*.parquet) and/or a sweep directory (runs.parquet).",
    )
    parser.add_argument("folder", metavar="DIR", type=Path, help="a reproduce or sweep output directory")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import wattsched.studies  # noqa: F401  (registers the studies' interactive views)
    from wattsched.viz.html import write_html_report

    print(write_html_report(args.folder))
    return 0
