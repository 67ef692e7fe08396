"""The shared output helpers of the CLI: progress as a bar on a terminal, plain lines elsewhere."""

from __future__ import annotations

import io

import pytest

from wattsched.cli._output import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_off_a_terminal_is_plain_lines_not_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    from wattsched import _progress

    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    update = progress_bar(10, "step", "training")
    update(4)
    update(10)
    assert log.getvalue() == ""  # quick work: no line, and never a bar's carriage returns
    monkeypatch.setattr(_progress, "INTERVAL_S", 0.0)
    update = progress_bar(10, "step", "training")
    update(4)
    update(10)
    lines = log.getvalue().splitlines()
    assert [line.split(",")[:2] for line in lines] == [["training: 4/10 steps", " 40 %"],
                                                      ["training: 10/10 steps", " 100 %"]]  # fmt: skip


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
