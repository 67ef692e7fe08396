"""The documentation cannot rot: its examples run, its reference pages come from the code, and the site
builds strictly and works in a browser opened from disk.

A fenced ``bash`` block directly after a line ``<!-- test -->`` is an example this file runs: the blocks of
one page run in order in one temporary folder (``bash -euo pipefail``), with ``wattsched`` being this tree's
command line. Pages without such blocks are skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from docs_fixtures import DOCS, SRC, bash, load_hooks

#: A tested block: the marker line, then a ```bash fence, its body, the closing fence.
TESTED_BLOCK = re.compile(r"^<!-- test -->[ \t]*\n```bash[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
#: Seconds one page's blocks may take together.
PAGE_TIMEOUT_S = 300
#: Pages whose examples take longer than a unit test should (run by `make test-slow`).
SLOW_PAGES: set[str] = set()


def marked_blocks(text: str) -> list[str]:
    """The bodies of the page's tested bash blocks, in page order."""
    return [match.group(1) for match in TESTED_BLOCK.finditer(text)]


def _pages() -> list[object]:
    """The pages with at least one tested block (the others have nothing to run)."""
    pages = []
    for page in sorted(DOCS.rglob("*.md")):
        name = page.relative_to(DOCS).as_posix()
        if not marked_blocks(page.read_text(encoding="utf-8")):
            continue
        marks = [pytest.mark.slow] if name in SLOW_PAGES else []
        pages.append(pytest.param(name, marks=marks, id=name))
    return pages


def _shim(folder: Path) -> Path:
    """A folder whose ``wattsched`` runs this tree's command line with the running interpreter."""
    folder.mkdir()
    script = folder / "wattsched"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m wattsched "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return folder


def test_the_block_extractor_takes_only_marked_bash_blocks() -> None:
    text = (
        "<!-- test -->\n```bash\necho one\n```\n\n```bash\necho not tested\n```\n"
        "<!-- test -->\n\n```bash\necho not directly after the marker\n```\n"
        "<!-- test -->\n```python\nprint('not bash')\n```\n"
        "<!-- test -->\n```bash\necho two\necho three\n```\n"
    )
    assert marked_blocks(text) == ["echo one\n", "echo two\necho three\n"]


def run_blocks(page: str, blocks: list[str], tmp_path: Path) -> str | None:
    """Run ``blocks`` in order in one fresh folder under ``tmp_path``; ``None`` when all succeed, else a
    report naming the page, the failing block's number and its output."""
    shell = bash()
    if shell is None:
        pytest.skip("bash is not installed")
    work = tmp_path / "work"
    work.mkdir()
    path = os.pathsep.join(
        [str(_shim(tmp_path / "bin")), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    )
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(SRC), "COLUMNS": "100"}
    env.pop("_ARGCOMPLETE", None)
    left_s = float(PAGE_TIMEOUT_S)  # the page's time, shared by its blocks
    for number, block in enumerate(blocks, start=1):
        started = time.monotonic()
        try:
            done = subprocess.run(
                [shell, "-euo", "pipefail", "-c", block],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=max(1.0, left_s),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"{page}: block {number} did not finish within the page's {PAGE_TIMEOUT_S} s"
        left_s -= time.monotonic() - started
        if done.returncode != 0:
            return (
                f"{page}: block {number} exited {done.returncode}\n--- block ---\n{block}"
                f"--- stdout ---\n{done.stdout}--- stderr ---\n{done.stderr}"
            )
    return None


@pytest.mark.parametrize("page", _pages())
def test_the_examples_of_a_page_run(page: str, tmp_path: Path) -> None:
    blocks = marked_blocks((DOCS / page).read_text(encoding="utf-8"))
    assert blocks, f"{page} has no <!-- test --> blocks"
    failure = run_blocks(page, blocks, tmp_path)
    if failure:
        pytest.fail(failure, pytrace=False)


def test_blocks_share_a_folder_and_a_failure_names_page_block_and_output(tmp_path: Path) -> None:
    blocks = [
        "echo 3 > n.txt\n",
        'test "$(cat n.txt)" = 3\nwattsched --version\n',
        "echo about to fail\nfalse | cat\necho never\n",
    ]
    failure = run_blocks("x.md", blocks, tmp_path)
    assert failure is not None
    assert failure.startswith("x.md: block 3 exited 1")  # pipefail: `false | cat` fails the block
    assert "about to fail" in failure and "never" not in failure.split("--- stdout ---")[1]


def _every_command(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    found = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _every_command(sub, (*path, name))
    return found


def test_the_cli_reference_names_every_command_and_option() -> None:
    from wattsched.cli import build_parser

    text = load_hooks().cli_reference()
    parser = build_parser(None)
    commands = _every_command(parser, ("wattsched",))
    assert len(commands) > 30  # the whole tree, not the lazily built top level
    headings = set(re.findall(r"^#+ (.+?) \{#", text, re.MULTILINE))
    for path in commands:
        assert " ".join(path) in headings, f"{' '.join(path)} has no section in the CLI reference"
    # Every table row has exactly its two cells: a "|" in a help text or an option is escaped.
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) > 200
    for row in rows:
        assert row.replace("\\|", "").count("|") == 3, row
    assert "<code>--gpu NAME&#124;FILE.toml</code>" in text
    # Every option of, e.g., `mig run` is in the reference, with its help text.
    run = dict(_every_command_parsers(parser))[("wattsched", "mig", "run")]
    for action in run._actions:
        for option in action.option_strings:
            assert f"<code>{option}" in text or f", {option}" in text, option


def _every_command_parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("wattsched",)
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _every_command_parsers(sub, (*path, name))
    return found


def test_the_generated_pages_cite_no_internal_document() -> None:
    # Users read these pages: a rule is explained where it is stated, not by a section number elsewhere.
    hooks = load_hooks()
    for text in (hooks.cli_reference(), hooks.schemas_reference()):
        cited = [line for line in text.splitlines() if re.search(r"CONTRACT|papers\.md|§", line)]
        assert cited == []


def test_the_schema_reference_has_every_file_kind() -> None:
    from wattsched.schemas import SCHEMAS, schema_text

    text = load_hooks().schemas_reference()
    for name in SCHEMAS:
        assert f"## {name} {{#{name}}}" in text
        assert schema_text(name).splitlines()[0] in text


def test_the_reference_pages_carry_their_markers() -> None:
    # The generated text replaces these lines at build time; without them a page would silently be empty.
    assert "<!-- generated: cli -->" in (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert "<!-- generated: schemas -->" in (DOCS / "reference" / "schemas.md").read_text(encoding="utf-8")


def test_sphinx_roles_before_code_spans_are_dropped_from_pages() -> None:
    hooks = load_hooks()
    html = "<p>see :func:<code>simulate</code> and :data:<code>X</code>; a:b:<code>kept</code></p>"
    assert hooks.on_page_content(html, None, None, None) == (
        "<p>see <code>simulate</code> and <code>X</code>; a:b:<code>kept</code></p>"
    )


def test_markdown_escaping_keeps_help_text_literal() -> None:
    escape = load_hooks().escape
    assert escape("a|b <x> dur_7g *x* `y`") == r"a\|b &lt;x&gt; dur\_7g \*x\* \`y\`"


def test_the_site_builds_strictly_with_every_reference_page(built_site: Path) -> None:
    site = built_site
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    assert 'id="wattsched-mig-run"' in cli and "--policy" in cli
    assert 'id="trace"' in (site / "reference" / "schemas.html").read_text(encoding="utf-8")
    api = (site / "reference" / "api.html").read_text(encoding="utf-8")
    assert 'id="wattsched.mig.MigSimulation"' in api
    assert ":func:<code>" not in api and ":class:<code>" not in api
    # Offline: the search index is inlined for file:// and no page loads a script or style from a server.
    assert (site / "search" / "search_index.js").is_file()
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
        assert remote == [], (page, remote)
