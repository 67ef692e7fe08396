"""`wattsched report DIR` writes DIR/index.html (CONTRACT §9)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wattsched.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))
from viz_fixtures import make_sweep_dir


def test_report_writes_index_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_sweep_dir(tmp_path / "sweep")
    assert main(["report", str(folder)]) == 0
    assert capsys.readouterr().out.strip() == str(folder / "index.html")
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("Plotly.newPlot(") == 2
    first = page
    assert main(["report", str(folder)]) == 0  # rewriting gives the same bytes
    assert (folder / "index.html").read_text(encoding="utf-8") == first
