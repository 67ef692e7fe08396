"""Crashes (issue 13 item 6): an unexpected exception prints one line naming a crash report, exit 1;
``--debug`` shows the traceback instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wattsched.cli import main, version
from wattsched.cli._crash import CRASH_DIR_ENV


def boom(args: object) -> int:
    raise RuntimeError("the engine broke\nsecond line of the message")


@pytest.fixture
def crashing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """``mig configs`` raises an unexpected error; crash reports go to a temporary folder."""
    import wattsched.cli.mig as mig

    monkeypatch.setattr(mig, "_configs", boom)
    monkeypatch.setenv(CRASH_DIR_ENV, str(tmp_path))
    return tmp_path


def test_unexpected_error_is_one_line_and_a_report(
    crashing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["mig", "configs", "--gpu", "a100-40gb", "-v"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("wattsched: internal error: RuntimeError: the engine broke (a bug; crash report: ")
    assert "--debug shows the traceback" in err
    reports = list(crashing.iterdir())
    assert len(reports) == 1 and str(reports[0]) in err
    text = reports[0].read_text()
    assert f"version: {version()}" in text
    assert "command: wattsched mig configs --gpu a100-40gb -v" in text
    assert "Traceback (most recent call last)" in text and "RuntimeError: the engine broke" in text
    assert "in boom" in text  # the frame that raised
    assert "python: " in text and "code: " in text


def test_debug_raises_the_error_itself(crashing: Path) -> None:
    with pytest.raises(RuntimeError, match="the engine broke"):
        main(["--debug", "mig", "configs"])
    assert list(crashing.iterdir()) == []


def test_debug_prints_the_traceback_from_the_command_line(tmp_path: Path) -> None:
    code = (
        "import sys, wattsched.cli.mig as m\n"
        "def boom(args): raise RuntimeError('the engine broke')\n"
        "m._configs = boom\n"
        "from wattsched.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {"PATH": "/usr/bin:/bin", CRASH_DIR_ENV: str(tmp_path)}
    plain = subprocess.run(
        [sys.executable, "-c", code, "mig", "configs"], capture_output=True, text=True, env=env, check=False
    )
    assert plain.returncode == 1 and plain.stderr.count("\n") == 1 and "crash report: " in plain.stderr
    debug = subprocess.run(
        [sys.executable, "-c", code, "mig", "configs", "--debug"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert "RuntimeError: the engine broke" in debug.stderr
    assert len(list(tmp_path.iterdir())) == 1  # only the run without --debug wrote a report


def test_unwritable_crash_folder_still_gives_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import wattsched.cli.mig as mig

    monkeypatch.setattr(mig, "_configs", boom)
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(CRASH_DIR_ENV, str(blocker / "reports"))
    assert main(["mig", "configs"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no crash report" in err


def test_user_errors_are_not_crashes(crashing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "run", "--config", "99", "--policy", "edf-fs", "--rate", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wattsched: error: ") and err.count("\n") == 1
    assert list(crashing.iterdir()) == []
