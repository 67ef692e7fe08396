"""Tab completion through argcomplete: the shell's request is answered from the real parser, and
``wattsched completion SHELL`` prints code that asks for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("argcomplete")
SRC = Path(__file__).resolve().parents[2] / "src"


def complete(line: str, tmp_path: Path) -> list[str]:
    """The words wattsched offers for the command line ``line`` with the cursor at its end."""
    out = tmp_path / "completions"
    env = {
        **os.environ,
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "PYTHONPATH": str(SRC),
    }
    subprocess.run([sys.executable, "-m", "wattsched"], env=env, check=True, timeout=60, capture_output=True)
    return sorted(word.strip() for word in out.read_text().split("\013") if word.strip())


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("wattsched mi", ["mig"]),
        ("wattsched s", ["schema", "slurm", "sweep"]),
        ("wattsched mig r", ["run"]),
        ("wattsched mig run --pol", ["--policy"]),
        ("wattsched -v mig run --pol", ["--policy"]),  # a global flag before the command
        ("wattsched completion ", ["--help", "-h", "bash", "fish", "zsh"]),
        ("wattsched schema --h", ["--help"]),
    ],
)
def test_completion_answers_from_the_parser(line: str, expected: list[str], tmp_path: Path) -> None:
    assert complete(line, tmp_path) == expected


def test_completion_prints_shell_code_for_each_shell() -> None:
    for shell, marker in (("bash", "complete "), ("zsh", "#compdef wattsched"), ("fish", "complete ")):
        done = subprocess.run(
            [sys.executable, "-m", "wattsched", "completion", shell],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
        assert marker in done.stdout and "wattsched" in done.stdout, shell


def test_an_unknown_shell_is_a_one_line_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "wattsched", "completion", "tcsh"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "tcsh" in done.stderr
