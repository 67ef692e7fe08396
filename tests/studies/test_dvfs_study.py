"""The DVFS study: cells, a tiny run_cell, summarize on a small hand-made frame, and report."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from wattsched.experiments.study import STUDIES
from wattsched.studies.dvfs import ROW_DEFAULTS, DvfsCell, DvfsStudy


def test_registered_and_cells_are_unique_and_deterministic() -> None:
    study = STUDIES.make("dvfs")
    assert isinstance(study, DvfsStudy)
    for scale in ("quick", "paper"):
        cells = study.cells(scale)
        keys = [c.key for c in cells]
        assert len(keys) == len(set(keys)) and keys == [c.key for c in study.cells(scale)]
    assert len(study.cells("paper")) > len(study.cells("quick"))


def test_run_cell_on_a_tiny_cell() -> None:
    cell = DvfsCell(
        "offline",
        0.5,
        2,
        0,
        1,
        64,
        (
            ("edl", 1.0, False, "sorted", "p2"),
            ("edl", 1.0, True, "sorted", "p2"),
            ("edl", 0.5, True, "on_demand", "p2"),
            ("edl", 1.0, False, "on_demand", "p2"),
            ("edl", 1.0, True, "on_demand", "hkbu"),
        ),
    )
    rows = DvfsStudy().run_cell(cell)
    # P2's rules: paper and code constants (2 rows a run); the authors' rules: x whole-slot / continuous
    assert len(rows) == 4 * 2 + 4 and all(set(r) == set(ROW_DEFAULTS) for r in rows)
    assert all(r["key"] == cell.key and r["tasks"] == 32 for r in rows)
    assert all(r["deadline_misses"] == 0 for r in rows if r["rules"] == "p2")
    off, on = rows[0], rows[2]
    assert (off["constants"], on["constants"], rows[1]["constants"]) == ("paper", "paper", "code")
    assert on["energy_run_j"] < off["energy_run_j"]
    # the same schedule under the code's constants: same run energy and placement, more idle, other turn-on
    assert rows[1]["energy_run_j"] == off["energy_run_j"] and rows[1]["pairs_used"] == off["pairs_used"]
    assert rows[1]["energy_overhead_j"] == pytest.approx(off["turn_ons"] * 200 * 60)
    assert rows[1]["energy_overhead_j"] != off["energy_overhead_j"]
    hkbu = [r for r in rows if r["rules"] == "hkbu"]
    assert [(r["constants"], r["idle_accounting"]) for r in hkbu] == [
        ("paper", "whole-slot"),
        ("code", "whole-slot"),
        ("paper", "continuous"),
        ("code", "continuous"),
    ]
    assert hkbu[1]["energy_idle_j"] == pytest.approx(hkbu[0]["energy_idle_j"] * 85 / 37)
    again = DvfsStudy().run_cell(replace(cell))  # pure: the same cell gives the same rows (but wall time)
    assert [{k: v for k, v in r.items() if k != "wall_s"} for r in rows] == [
        {k: v for k, v in r.items() if k != "wall_s"} for r in again
    ]
    online = DvfsStudy().run_cell(
        replace(cell, mode="online", util=0.2, runs=(("bin", 1.0, True, "sorted", "p2"),))
    )
    assert online[0]["mode"] == "online" and online[0]["tasks"] == round(0.2 * 64) + int(0.4 * 64)


def _row(mode: str, util: float, l: int, dvfs: bool, total: float, theta: float = 1.0, rep: int = 0) -> dict:
    return {
        **ROW_DEFAULTS,
        "mode": mode,
        "util": util,
        "l": l,
        "replicate": rep,
        "algo": "edl",
        "theta": theta,
        "dvfs": dvfs,
        "grouping": "sorted",
        "rules": "p2",
        "constants": "paper",
        "idle_accounting": "continuous",
        "energy_total_j": total,
        "energy_run_j": total,
        "energy_idle_j": 0.0,
        "energy_overhead_j": 0.0,
    }


def test_summarize_small_frame() -> None:
    rows = pd.DataFrame(
        [
            # offline l=1: savings 1 - 60/100 = 0.4 (U 0.4) and 1 - 70/100 = 0.3 (U 1.0): mean 0.35
            _row("offline", 0.4, 1, False, 100.0),
            _row("offline", 0.4, 1, True, 60.0),
            _row("offline", 1.0, 1, False, 100.0),
            _row("offline", 1.0, 1, True, 70.0),
            # online l=16 at U=1.6: theta 1 -> 1 - 75/100 = 0.25; theta 0.5 -> 1 - 72/100 = 0.28
            _row("online", 1.6, 16, False, 100.0),
            _row("online", 1.6, 16, True, 75.0),
            _row("online", 1.6, 16, True, 72.0, theta=0.5),
        ]
    )
    block = DvfsStudy().summarize(rows)["dvfs"]
    assert block["offline_saving_l1"] == pytest.approx(0.35)
    assert block["online_saving_u16_l16"] == pytest.approx(0.25)
    assert block["online_saving_u16_l16_best_theta"] == pytest.approx(0.28)
    assert block["online_saving_u16_by_l"]["16"]["theta_0.5"] == pytest.approx(0.28)
    like = block["like_for_like"]
    assert like["offline"]["p2_sorted"]["paper"]["1"]["theta_1"] == pytest.approx(0.35)
    assert like["online_u16"]["p2_sorted"]["paper"]["16"]["theta_0.5"] == pytest.approx(0.28)
    assert like["offline"]["p2_sorted"]["code"]["1"]["theta_1"] is None  # no such rows: NaN -> null
    # rows of other rules or constants never leak into the original keys
    other = rows.assign(rules="hkbu", idle_accounting="whole-slot", energy_total_j=rows["energy_total_j"] * 2)
    other.loc[other["dvfs"], "energy_total_j"] *= 0.5  # savings 1 - 60/200 and 1 - 70/200: mean 0.675
    again = DvfsStudy().summarize(pd.concat([rows, other]))["dvfs"]
    assert again["offline_saving_l1"] == pytest.approx(0.35)
    assert again["like_for_like"]["offline"]["hkbu"]["paper"]["1"]["theta_1"] == pytest.approx(0.675)


def test_report_writes_figures(tmp_path: Path) -> None:
    study = DvfsStudy()
    runs = tuple(
        ("edl", 1.0, dvfs, grouping, rules)
        for dvfs in (False, True)
        for grouping, rules in (("sorted", "p2"), ("on_demand", "p2"), ("on_demand", "hkbu"))
    )
    cell = DvfsCell("offline", 0.5, 2, 0, 1, 64, runs)
    online = replace(cell, mode="online", util=0.3)
    rows = pd.DataFrame(study.run_cell(cell) + study.run_cell(online))
    text = study.report(rows, tmp_path)
    assert text.startswith("## P2") and "33–35 %" in text
    assert {p.name for p in tmp_path.iterdir()} >= {
        "dvfs_offline_saving_vs_u.png",
        "dvfs_online_saving.png",
        "dvfs_offline_saving_vs_l_rules.png",
    }
    # every table row names its rules and constants
    assert "| authors' code (`--reproduce-hkbu`) | code: 85 W, 200 W·slot/server |" in text
    assert "| P2's text (Alg. 3 grouping) | paper: 37 W, 90 W·slot/pair |" in text
