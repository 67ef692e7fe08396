"""Checks shared by the hostile-input tests: run the CLI in-process and demand one clean error line."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from wattsched.cli import main

__all__ = ["assert_one_line_error", "cli", "lines", "run_in", "write"]


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


def assert_one_line_error(capsys: pytest.CaptureFixture[str], code: int, *pieces: str) -> str:
    """Exit 2, empty stdout, one stderr line starting ``wattsched: error:`` holding every piece."""
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert out == ""
    assert "Traceback" not in err and "Warning" not in err
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert err.startswith("wattsched: error: "), err
    for piece in pieces:
        assert piece in err, (piece, err)
    return err


def cli(argv: list[str]) -> int:
    """Exit status of ``wattsched argv``; a RuntimeWarning fails the test (argparse exits via SystemExit)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return main(argv)
        except SystemExit as stop:
            return int(stop.code or 0)


def run_in(folder: Path, argv: list[str]) -> int:
    """Run the CLI and check that ``folder`` holds the same names afterwards (no output or temp file)."""
    before = sorted(p.name for p in folder.iterdir())
    code = cli(argv)
    assert sorted(p.name for p in folder.iterdir()) == before
    return code
