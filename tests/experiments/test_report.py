from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from wattsched.errors import ConfigError
from wattsched.experiments.report import assemble_report, dumps_json, jsonable, markdown_table, merge_blocks


def test_jsonable_and_deterministic_dumps() -> None:
    value = {"b": np.float64(1.5), "a": (np.int64(2), float("nan")), 3: np.array([1.0, np.inf])}
    assert jsonable(value) == {"b": 1.5, "a": [2, None], "3": [1.0, None]}
    text = dumps_json(value)
    assert text == dumps_json(dict(reversed(list(value.items()))))  # key order does not matter
    assert list(json.loads(text)) == ["3", "a", "b"] and text.endswith("}\n")


def test_merge_blocks_refuses_two_owners() -> None:
    merged = merge_blocks(
        {"table3": {"table3": {"x": 1}}, "table2": {"table2": {"y": 2}, "table2_detail": {}}}
    )
    assert list(merged) == ["table2", "table2_detail", "table3"]
    with pytest.raises(ConfigError, match="'table2' is written by both 'a' and 'b'"):
        merge_blocks({"a": {"table2": 1}, "b": {"table2": 2}})


def test_markdown_table_formats_floats() -> None:
    assert markdown_table(["p", "ET"], [["edf-ss", 5.3749], ["llf", float("nan")]]) == (
        "| p | ET |\n|---|---|\n| edf-ss | 5.375 |\n| llf | n/a |\n"
    )


def test_assemble_report_orders_sections() -> None:
    text = assemble_report(
        {"table3": "## table3\nB", "dvfs": "## dvfs\nA", "zeta": "## zeta\nC", "presets": "## presets\nD"},
        {"table3": "quick", "dvfs": "paper", "zeta": "quick"},
        first=("presets", "table3", "dvfs"),
    )
    # the sections named first in that order, then the others by name; a summary section has no scale
    assert text.index("## presets") < text.index("## table3") < text.index("## dvfs") < text.index("## zeta")
    assert "table3 = quick, dvfs = paper, zeta = quick" in text


def test_only_runs_add_to_the_earlier_outputs(tmp_path: Path) -> None:
    from experiments_fakes import FakeStudy  # noqa: F401  (registers the "fake" study)

    from wattsched.experiments.runner import reproduce

    reproduce(tmp_path, "quick", only=["fake"], workers=1, progress=False)
    (tmp_path / "sections" / "other.md").write_text("## other\n\nkept\n")
    (tmp_path / "sections" / "other.json").write_text(json.dumps({"scale": "paper", "blocks": {"other": 1}}))
    reproduce(tmp_path, "quick", only=["fake"], workers=1, progress=False)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["other"] == 1 and summary["fake"]["rows"] == 36
    report = (tmp_path / "report.md").read_text()
    assert "## fake" in report and "kept" in report
