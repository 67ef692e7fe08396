"""Files wattsched writes take the user's umask (a temporary file is 0600 until it is published). The umask
is the process's, read once when wattsched starts: each case runs wattsched in a process started with it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

WRITE_TEXT = "import sys; from wattsched.cli._output import write_text; write_text(sys.argv[1], '{}\\n')"
GENERATE = "import sys; from wattsched.cli import main; sys.exit(main(sys.argv[1:]))"


def _run(umask: int, code: str, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-c", code, *args],
        check=True,
        capture_output=True,
        preexec_fn=lambda: os.umask(umask),
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_text_files_take_the_umask(tmp_path: Path, umask: int) -> None:
    _run(umask, WRITE_TEXT, str(tmp_path / "out.json"))
    assert _mode(tmp_path / "out.json") == 0o666 & ~umask


@pytest.mark.parametrize(("umask", "name"), [(0o022, "queue.csv"), (0o002, "queue.parquet")])
def test_traces_take_the_umask(tmp_path: Path, umask: int, name: str) -> None:
    _run(
        umask,
        GENERATE,
        "mig",
        "generate",
        "--rate",
        "0.5",
        "--hours",
        "1",
        "--seed",
        "1",
        "-o",
        str(tmp_path / name),
    )
    assert _mode(tmp_path / name) == 0o666 & ~umask
