"""The Table III study end to end at a tiny size: cells, rows, summary blocks and the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from wattsched.experiments.studies.table3 import Table3Study
from wattsched.experiments.study import STUDIES


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    study = Table3Study(quick_days=2, block_days=1, quick_selection_days=1, pilot_days=1, dqn_timesteps=200)
    frames = [pd.DataFrame(study.run_cell(cell)) for cell in study.cells("quick")]
    return pd.concat(frames, ignore_index=True)


def test_cells_are_unique_and_cover_every_method() -> None:
    study = STUDIES.make("table3")
    cells = study.cells("quick")
    assert len({c.key for c in cells}) == len(cells)
    methods = {c.method for c in cells}
    assert methods == {
        "static-selection",
        "dynamic",
        "no-mig",
        "static",
        "static-cfg3",
        "day-night",
        "lookahead",
    }
    # 100 held-out days at quick scale for every evaluated method
    for method in methods - {"static-selection"}:
        assert sum(c.days for c in cells if c.method == method) == 100


def test_summary_blocks(rows: pd.DataFrame) -> None:
    summary = Table3Study().summarize(rows)
    assert set(summary["table3"]) == {"no-mig", "static", "day-night", "dynamic", "lookahead"}
    for method in ("no-mig", "static", "day-night", "dynamic", "lookahead"):
        detail = summary["table3_detail"][method]
        assert detail["days"] == 2 and detail["energy_j"] > 0 and detail["avg_tardiness_s"] >= 0
    assert summary["table3_detail"]["day-night"]["repartitions"] == 2.0
    assert summary["table3_detail"]["static"]["repartitions"] == 0.0
    extra = summary["table3_extra"]
    assert extra["static_configuration"] in range(1, 13)
    imp = extra["improvements"]["dynamic_vs_static"]
    assert imp["days"] == 2 and set(imp) == {"ratio_of_means", "mean_of_ratios", "days_better", "days"}


def test_every_method_saw_the_same_days(rows: pd.DataFrame) -> None:
    days = rows[rows["kind"] == "day"]
    jobs = days.pivot_table(index="day", columns="method", values="jobs")
    assert (jobs.nunique(axis=1) == 1).all()  # common random numbers: same queue per day for every method


def test_report_writes_figures(rows: pd.DataFrame, tmp_path: Path) -> None:
    text = Table3Study().report(rows, tmp_path)
    assert "Table III" in text and "paper ET" in text
    assert (tmp_path / "table3_repartitions_per_hour.png").is_file()
    assert (tmp_path / "table3_fig11_dynamic.png").is_file()
