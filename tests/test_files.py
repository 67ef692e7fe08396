"""Files wattsched writes take the user's umask (a temporary file is 0600 until it is published)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.cli._output import write_text


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_text_files_take_the_umask(tmp_path: Path, umask: int) -> None:
    write_text(str(tmp_path / "out.json"), "{}\n")
    assert _mode(tmp_path / "out.json") == 0o666 & ~umask


def test_traces_take_the_umask(tmp_path: Path, umask: int, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("queue.csv", "queue.parquet"):
        assert main(["mig", "generate", "--rate", "0.5", "--hours", "1", "--seed", "1",
                     "-o", str(tmp_path / name)]) == 0
        assert _mode(tmp_path / name) == 0o666 & ~umask
    capsys.readouterr()
