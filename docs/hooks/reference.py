"""MkDocs hook: the reference pages are generated from the code at every build, so they cannot drift.

``docs/reference/cli.md`` and ``docs/reference/schemas.md`` hold an introduction and a marker line
(``<!-- generated: cli -->``, ``<!-- generated: schemas -->``) that :func:`on_page_markdown` replaces with
the text of :func:`cli_reference` (every command of ``wattsched``'s real argument parser, its usage,
description and options) and :func:`schemas_reference` (what ``wattsched schema NAME`` prints, for every
file kind).

The package is imported from the ``src/`` folder beside this ``docs/`` folder, so a build documents the tree
it is run in, installed or not.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"

#: Marker line -> the function whose text replaces it.
MARKERS = {"<!-- generated: cli -->": "cli_reference", "<!-- generated: schemas -->": "schemas_reference"}

#: The width the usage lines are wrapped at (argparse reads it from COLUMNS), so a build does not depend on
#: the terminal it runs in.
USAGE_COLUMNS = "100"


def _use_this_tree() -> None:
    """Import ``wattsched`` from this tree's ``src/`` (checked at each use: the build's plugins may change
    ``sys.path`` after the hook is loaded)."""
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **kwargs: Any) -> str:
    """Replace each marker line of a page with its generated text."""
    for marker, function in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, globals()[function]())
    return markdown


#: A Sphinx cross-reference role left in front of a code span by the docstrings (``:func:`name```): shown as
#: the code span alone.
ROLE = re.compile(r":(?:func|class|data|meth|attr|mod|exc|obj|const):(<code>)")


def on_page_content(html: str, page: Any, config: Any, files: Any, **kwargs: Any) -> str:
    """The API reference without the Sphinx role names its docstrings use before code spans."""
    return ROLE.sub(r"\1", html)


def escape(text: str) -> str:
    """``text`` as literal Markdown: HTML and Markdown's emphasis, code, link and table characters escaped."""
    text = html.escape(text.replace("\\", "\\\\"), quote=False)
    return re.sub(r"([`*_\[\]|#])", r"\\\1", text)


def anchor(path: list[str]) -> str:
    return "-".join(path)


def commands(
    parser: argparse.ArgumentParser, path: list[str]
) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    """``(path, parser)`` for ``parser`` and every sub-command below it, depth first in declaration order."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # an alias names the same parser again
                    seen.add(id(sub))
                    yield from commands(sub, [*path, name])


def _subcommand_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    helps: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for pseudo in action._choices_actions:
                helps[pseudo.dest] = pseudo.help or ""
    return helps


def _option_rows(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        invocation = formatter._format_action_invocation(action)
        text = formatter._expand_help(action) if action.help else ""
        if action.choices is not None and "{" not in invocation:
            shown = ", ".join(str(choice) for choice in action.choices)
            if shown not in text:
                text = f"{text} (one of: {shown})" if text else f"one of: {shown}"
        if action.required and action.option_strings:
            text = f"required; {text}" if text else "required"
        rows.append((invocation, text))
    return rows


def _command_section(path: list[str], parser: argparse.ArgumentParser) -> str:
    level = "#" * min(len(path) + (1 if len(path) == 1 else 0), 6)
    lines = [f"{level} {' '.join(path)} {{#{anchor(path)}}}", ""]
    if parser.description:
        lines += [escape(parser.description), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    helps = _subcommand_helps(parser)
    if helps:
        lines += ["| Command | Description |", "| --- | --- |"]
        lines += [
            f"| [{escape(name)}](#{anchor([*path, name])}) | {escape(text)} |" for name, text in helps.items()
        ]
        lines.append("")
    rows = _option_rows(parser)
    if rows:
        lines += ["| Argument | Description |", "| --- | --- |"]
        # A "|" in an invocation (--gpu NAME|FILE.toml) would end the table cell: written as an entity.
        lines += [
            f"| <code>{html.escape(name).replace('|', '&#124;')}</code> | {escape(text)} |"
            for name, text in rows
        ]
        lines.append("")
    if parser.epilog:
        lines += [escape(parser.epilog), ""]
    return "\n".join(lines)


def cli_reference() -> str:
    """Every command of ``wattsched``'s parser (built in full), as Markdown sections."""
    _use_this_tree()
    from wattsched.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = USAGE_COLUMNS
    try:
        tree = commands(build_parser(None), ["wattsched"])
        return "\n".join(_command_section(path, parser) for path, parser in tree)
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def schemas_reference() -> str:
    """Every file kind of :data:`wattsched.schemas.SCHEMAS`: its summary and its full description."""
    _use_this_tree()
    from wattsched.schemas import SCHEMAS, schema_text

    sections = []
    for name, (summary, _) in SCHEMAS.items():
        sections.append(
            f"## {name} {{#{name}}}\n\n{escape(summary)}. `wattsched schema {name}` prints:\n\n"
            f"```text\n{schema_text(name).rstrip()}\n```\n"
        )
    return "\n".join(sections)
