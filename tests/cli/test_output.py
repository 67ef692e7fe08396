"""The shared output helpers of the CLI: the progress bar shown only on a terminal."""

from __future__ import annotations

import io

import pytest

from wattsched.cli._output import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_is_off_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert progress_bar(10, "step", "training") is None


def test_progress_bar_counts_to_its_total_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = _Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    update = progress_bar(400, "step", "training")
    assert update is not None
    for done in (100, 250, 400):
        update(done)
    text = screen.getvalue()  # tqdm redraws at most every 0.1 s, so the middle counts may not show
    assert text.startswith("\rtraining:") and "0/400" in text and "400/400" in text
    assert text.endswith("\n")  # closed at its total
