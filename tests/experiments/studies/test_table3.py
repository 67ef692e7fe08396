"""The Table III study end to end at a tiny size: cells, rows, summary blocks and the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from wattsched.experiments.studies.table3 import Table3Cell, Table3Study
from wattsched.experiments.studies.table3_sensitivity import (
    Table3SensCell,
    run_sensitivity_cell,
    sensitivity_block,
)
from wattsched.experiments.study import STUDIES

TINY = {
    "quick_days": 2,
    "block_days": 1,
    "quick_selection_days": 1,
    "pilot_days": 1,
    "dqn_timesteps": 200,
    "sensitivity_multipliers": (1.0, 3.0),
    "sensitivity_slacks": ((2.0, 3.0),),
    "sensitivity_quick_days": 2,
}


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    study = Table3Study(**TINY)  # type: ignore[arg-type]
    frames = [pd.DataFrame(study.run_cell(cell)) for cell in study.cells("quick")]
    return pd.concat(frames, ignore_index=True)


def test_cells_are_unique_and_cover_every_method() -> None:
    study = STUDIES.make("table3")
    every = study.cells("quick")
    assert len({c.key for c in every}) == len(every)
    cells = [c for c in every if isinstance(c, Table3Cell)]
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
    assert "sensitivity" in text and "x1-slack2-3" in text and "P1 order" in text
    assert (tmp_path / "table3_sensitivity_load.png").is_file()


def test_sensitivity_cells_cover_conditions_and_methods() -> None:
    study = Table3Study()
    for scale, days, methods in (
        ("quick", 20, {"no-mig", "static", "static-cfg3", "day-night"}),
        ("paper", 100, {"no-mig", "static", "static-cfg3", "day-night", "lookahead"}),
    ):
        cells = [c for c in study.cells(scale) if isinstance(c, Table3SensCell)]  # type: ignore[arg-type]
        assert {c.condition for c in cells} == {"x1", "x2", "x3", "x4", "x1-slack2-3"}
        assert {c.method for c in cells} == methods
        for condition in {c.condition for c in cells}:
            for method in methods:
                mine = [c for c in cells if c.condition == condition and c.method == method]
                # days 0..days-1 exactly once: the same held-out days as the main study's first days
                assert sorted(d for c in mine for d in range(c.first_day, c.first_day + c.days)) == list(
                    range(days)
                )
        selection = study.paper_selection_days if scale == "paper" else study.quick_selection_days
        assert {c.selection_days for c in cells} == {selection}


def test_sensitivity_leaves_the_main_table_alone(rows: pd.DataFrame) -> None:
    full = Table3Study().summarize(rows)
    main_only = Table3Study().summarize(rows[~rows["kind"].str.startswith("sens")])
    assert full["table3"] == main_only["table3"] and full["table3_detail"] == main_only["table3_detail"]
    assert "table3_sensitivity" not in main_only
    assert set(full["table3_sensitivity"]) == {"x1", "x3", "x1-slack2-3"}


def test_sensitivity_uses_common_random_numbers(rows: pd.DataFrame) -> None:
    sens = rows[rows["kind"] == "sens-day"]
    main = rows[rows["kind"] == "day"]
    columns = ["day", "energy_j", "avg_tardiness_s", "jobs"]
    for method in ("no-mig", "static", "static-cfg3", "day-night"):
        # x1 is the main study's workload: same days, seeds and selection days -> identical results
        ours = sens[(sens["condition"] == "x1") & (sens["method"] == method)][columns].sort_values("day")
        theirs = main[main["method"] == method][columns].sort_values("day")
        assert ours.to_numpy().tolist() == theirs.to_numpy().tolist()
    jobs = sens.pivot_table(index="day", columns="condition", values="jobs", aggfunc="first")
    assert (jobs["x1-slack2-3"] == jobs["x1"]).all()  # looser deadlines keep the same jobs
    assert (jobs["x3"] > 2 * jobs["x1"]).all()  # 3x the arrival rate (~600 vs ~200 jobs per day)
    per_day = sens.groupby(["condition", "day"])["jobs"].nunique()
    assert (per_day == 1).all()  # every method of a condition saw the same queue
    block = Table3Study().summarize(rows)["table3_sensitivity"]
    static_rows = sens[sens["method"] == "static"]
    for condition, entry in block.items():
        assert entry["static_configuration"] in range(1, 13)
        assert (
            static_rows.loc[static_rows["condition"] == condition, "configuration"]
            == (entry["static_configuration"])
        ).all()
        assert entry["days"] == 2 and set(entry["et"]) == {"no-mig", "static", "static-cfg3", "day-night"}
    assert block["x1-slack2-3"]["deadline_slack"] == [2.0, 3.0] and block["x3"]["rate_multiplier"] == 3.0


def test_sensitivity_block_by_hand() -> None:
    # One day, three pooled methods: energies 2, 1, 1 J; tardiness 600, 120, 0 s = 10, 2, 0 min.
    # a = mean tardiness / (2 mean energy) = 4 / (2 * 4/3) = 1.5; ET = (a x + y) / (a + 1):
    # no-mig (3 + 10) / 2.5 = 5.2, static (1.5 + 2) / 2.5 = 1.4, day-night 1.5 / 2.5 = 0.6.
    # static-cfg3 (energy 1 J, 1500 s = 25 min) is scored with that a: (1.5 + 25) / 2.5 = 10.6.
    base = {
        "kind": "sens-day",
        "condition": "x2",
        "rate_multiplier": 2.0,
        "slack_low": 1.0,
        "slack_high": 1.5,
        "day": 0,
        "jobs": 10,
        "late_jobs": 1,
    }
    frame = pd.DataFrame(
        [
            {**base, "method": "no-mig", "energy_j": 2.0, "avg_tardiness_s": 600.0, "configuration": 0},
            {**base, "method": "static", "energy_j": 1.0, "avg_tardiness_s": 120.0, "configuration": 4},
            {**base, "method": "day-night", "energy_j": 1.0, "avg_tardiness_s": 0.0, "configuration": 0},
            {**base, "method": "static-cfg3", "energy_j": 1.0, "avg_tardiness_s": 1500.0, "configuration": 3},
        ]
    )
    entry = sensitivity_block(frame)["x2"]
    assert entry["et_coefficient_per_j"] == pytest.approx(1.5)
    assert entry["et"] == pytest.approx({"no-mig": 5.2, "static": 1.4, "static-cfg3": 10.6, "day-night": 0.6})
    assert entry["paper_order_holds"] is True  # 5.2 > 1.4 > 0.6
    assert entry["paper_order_holds_cfg3"] is False  # cfg 3's 10.6 is above no-mig's 5.2
    assert entry["static_configuration"] == 4 and entry["detail"]["no-mig"]["late_share"] == 0.1
    paired = entry["paired_differences"]["static - day-night"]  # 1.4 - 0.6 on the single day
    assert paired["mean"] == pytest.approx(0.8) and paired["days"] == 1


def test_sensitivity_lookahead_cell() -> None:
    cell = Table3SensCell("lookahead", 0, 0, 1, 2025, 1.0, (2.0, 3.0), 1, 1)
    assert cell.key == "sens/x1-slack2-3/lookahead/b000"
    (row,) = run_sensitivity_cell(cell)
    assert row["kind"] == "sens-day" and row["method"] == "lookahead" and row["jobs"] > 0
    assert row["slack_low"] == 2.0 and row["energy_j"] > 0
