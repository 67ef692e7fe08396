"""The Table III study end to end at a tiny size: variants, cells, rows, summary blocks and the report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wattsched.errors import ConfigError, UnknownNameError
from wattsched.experiments.protocol import Method, stacked
from wattsched.experiments.study import STUDIES
from wattsched.studies.table3 import Table3Cell, Table3Study, Table3Variant
from wattsched.studies.table3_analysis import summarize
from wattsched.studies.table3_sensitivity import (
    Table3SensCell,
    run_sensitivity_cell,
    sensitivity_block,
)

TINY = {
    "quick_days": 2,
    "quick_extra_days": 1,
    "block_days": 1,
    "quick_selection_days": 1,
    "pilot_days": 1,
    "dqn_timesteps": 200,
    "dqn_ensemble": 2,
    "dqn_rollout": 1,
    "sensitivity_multipliers": (1.0, 2.5),
    "sensitivity_slacks": ((2.0, 3.0),),
    "sensitivity_quick_days": 2,
}
VARIANTS = {"paper", "literal", "paper+slice-aware", "literal+slice-aware", "paper+h200-141gb"}


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    study = Table3Study(**TINY)  # type: ignore[arg-type]
    frames = [pd.DataFrame(study.run_cell(cell)).assign(cell=cell.key) for cell in study.cells("quick")]
    return pd.concat(frames, ignore_index=True)


def test_cells_are_unique_and_cover_every_variant_and_method() -> None:
    study = STUDIES.make("table3")
    every = study.cells("quick")
    assert len({c.key for c in every}) == len(every)
    cells = [c for c in every if isinstance(c, Table3Cell)]
    assert {c.variant.name for c in cells} == VARIANTS
    for variant in VARIANTS:
        mine = [c for c in cells if c.variant.name == variant]
        labels = {c.method.label if c.method else "selection" for c in mine}
        dqn = variant in ("paper", "literal")  # at quick scale; the H200 trains its DQN at paper scale
        expected = {"selection", "no-mig", "static", "static-best", "day-night", "lookahead"}
        assert labels == expected | ({"dynamic", "dynamic-rollout"} if dqn else set())
        days = 40 if "+" in variant else 50  # extra variants run fewer days at quick scale
        for label in labels - {"selection"}:
            held = sorted(
                d
                for c in mine
                if c.method and c.method.label == label
                for d in range(c.first_day, c.first_day + c.days)
            )
            assert held == list(range(days))  # the same held-out days 0..days-1 for every method
    # heaviest first: every DQN training (the busiest load first), the rollout blocks (10 days each) of the
    # lightest load (its training ends first), the lookahead blocks (no network needed), the other rollouts
    order = [(c.variant.name, c.method.label if c.method else "selection") for c in cells]
    assert order[:2] == [("paper", "dynamic"), ("literal", "dynamic")]
    assert order[2:7] == [("literal", "dynamic-rollout")] * 5
    lookahead = [k for k, (_, label) in enumerate(order) if label == "lookahead"]
    assert lookahead == list(range(7, 7 + len(lookahead)))
    after = 7 + len(lookahead)
    assert order[after : after + 5] == [("paper", "dynamic-rollout")] * 5
    assert "dynamic-rollout" not in {label for _, label in order[after + 5 :]}
    assert {c.days for c in cells if c.method and c.method.rollout} == {10}
    dynamic = Method("dynamic")
    paper_scale = [c for c in study.cells("paper") if isinstance(c, Table3Cell) and c.method == dynamic]
    assert {c.variant.name for c in paper_scale} == {"paper", "literal", "paper+h200-141gb"}
    # the tuned ensemble at both scales, scored with and without rollouts; P1's §A.6.4 DQN only when asked
    assert {c.dqn_hyperparameters for c in paper_scale} == {"quick"}
    rollout = [c for c in study.cells("paper") if isinstance(c, Table3Cell) and c.method and c.method.rollout]
    assert {c.method.rollout for c in rollout if c.method} == {2}
    # a rollout block trains (or loads) the very DQN of its variant's own cell
    assert {(c.variant, c.dqn_hyperparameters, c.dqn_ensemble) for c in rollout} == {
        (c.variant, c.dqn_hyperparameters, c.dqn_ensemble) for c in paper_scale
    }
    # the recipe's 8 networks at paper scale (None: the hyperparameters'), 3 of them at quick scale
    assert {c.dqn_ensemble for c in paper_scale} == {None}
    assert {c.dqn_ensemble for c in cells if c.method == dynamic} == {3}
    for scale in ("quick", "paper"):
        given = [c for c in Table3Study(dqn_ensemble=2).cells(scale) if isinstance(c, Table3Cell)]
        assert {c.dqn_ensemble for c in given if c.method == dynamic} == {2}  # dqn_ensemble wins at both
    whole = [c for c in Table3Study(quick_dqn_ensemble=None).cells("quick") if isinstance(c, Table3Cell)]
    assert {c.dqn_ensemble for c in whole if c.method == dynamic} == {None}
    off = [c for c in Table3Study(dqn_rollout=0).cells("quick") if isinstance(c, Table3Cell)]
    assert not [c for c in off if c.method and c.method.rollout]
    # the rollout's sampled days: 1 at quick scale, 2 at paper scale, dqn_rollout at both when given
    rollouts = {
        (scale, given): {
            c.method.rollout
            for c in Table3Study(dqn_rollout=given).cells(scale)
            if isinstance(c, Table3Cell) and c.method and c.method.rollout
        }
        for scale in ("quick", "paper")
        for given in (None, 3)
    }
    assert rollouts == {("quick", None): {1}, ("paper", None): {2}, ("quick", 3): {3}, ("paper", 3): {3}}
    asked = [c for c in Table3Study(dqn_hyperparameters="paper").cells("paper") if isinstance(c, Table3Cell)]
    assert {c.dqn_hyperparameters for c in asked if c.method == dynamic} == {"paper"}
    paper = [c for c in cells if c.variant.name == "paper"]
    assert all(c.variant.workload().rate_multiplier == 2.5 for c in paper)
    assert all(c.variant.workload().rate_multiplier == 1.0 for c in cells if c.variant.preset == "literal")


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError, match="unknown table3 variants"):
        Table3Study(variants=("paper+tpu",))
    with pytest.raises(UnknownNameError, match="unknown preset"):
        Table3Study(preset="bogus")
    with pytest.raises(ConfigError, match="deadline rule"):
        Table3Variant(deadline_rule="soon")
    with pytest.raises(ConfigError, match="dqn_hyperparameters must be quick or paper"):
        Table3Study(dqn_hyperparameters="tuned")
    with pytest.raises(ConfigError, match="quick_dqn_ensemble must be >= 1, got 0"):
        Table3Study(quick_dqn_ensemble=0)
    with pytest.raises(ConfigError, match="quick_dqn_rollout must be >= 0"):
        Table3Study(quick_dqn_rollout=-1)
    study = STUDIES.make("table3", variants=["literal"], preset="literal")
    assert {c.variant.name for c in study.cells("quick") if isinstance(c, Table3Cell)} == {"literal"}


def test_summary_blocks(rows: pd.DataFrame) -> None:
    summary = Table3Study().summarize(rows)
    assert set(summary["table3"]) == {
        "no-mig",
        "static",
        "static-best",
        "day-night",
        "dynamic",
        "lookahead",
        "dynamic-rollout",
    }
    for method in summary["table3"]:
        detail = summary["table3_detail"][method]
        assert detail["days"] == 2 and detail["energy_j"] > 0 and detail["avg_tardiness_s"] >= 0
        assert 0 < detail["busy_share"] <= 1
    assert summary["table3_detail"]["day-night"]["repartitions"] == 2.0
    assert summary["table3_detail"]["static"]["repartitions"] == 0.0
    extra = summary["table3_extra"]
    assert extra["preset"] == "paper" and extra["rate_multiplier"] == 2.5
    assert extra["static_configuration"] == "3"  # the A100's static role (P1's choice)
    assert extra["static_best_configuration"] in extra["selection_et"]
    assert extra["et_pool"] == ["no-mig", "static", "day-night", "dynamic"]  # the rollout is not in it
    imp = extra["improvements"]["dynamic_vs_static"]
    assert imp["days"] == 2 and imp["ci95_low"] <= imp["ratio_of_means"] <= imp["ci95_high"]
    assert extra["improvements"]["dynamic-rollout_vs_dynamic"]["days"] == 2
    assert extra["paper_order_holds_rollout"] in (True, False)
    # both presets, both rules, both GPUs
    assert set(summary["presets"]) == {"paper", "literal"}
    assert summary["presets"]["paper"]["table3"] == summary["table3"]
    assert summary["presets"]["literal"]["table3_extra"]["rate_multiplier"] == 1.0
    assert set(summary["deadline_rules"]) == {"p1", "slice-aware"}
    assert "dynamic" not in summary["deadline_rules"]["slice-aware"]["paper"]["table3"]
    assert set(summary["gpus"]) == {"a100-40gb", "h200-141gb"}
    # GPU and rule comparisons use the days common to their variants (the extra ones ran day 0 only)
    assert summary["gpus"]["a100-40gb"]["table3_detail"]["static"]["days"] == 1
    assert summary["deadline_rules"]["p1"]["paper"]["table3_detail"]["static"]["days"] == 1
    literal = summarize(rows, "literal")
    assert literal["table3"] == summary["presets"]["literal"]["table3"]


def test_et_by_hand() -> None:
    # One day, pool no-mig/static/day-night/dynamic: energies 2, 1, 1, 1 J; tardiness 600, 120, 0, 0 s
    # = 10, 2, 0, 0 min. a = mean tardiness / (2 mean energy) = 3 / (2 * 1.25) = 1.2;
    # ET = (a x + y) / (a + 1): no-mig (2.4 + 10) / 2.2, static (1.2 + 2) / 2.2, day-night and dynamic
    # 1.2 / 2.2; lookahead (1 J, 1200 s = 20 min) is scored with that a: (1.2 + 20) / 2.2.
    base = {
        "kind": "day",
        "variant": "paper",
        "preset": "paper",
        "deadline_rule": "p1",
        "gpu": "a100-40gb",
        "rate_multiplier": 2.5,
        "day": 0,
        "jobs": 10,
        "late_jobs": 1,
        "repartitions": 0,
        "idle_share": 0.5,
        "configuration": "",
    }
    values = {
        "no-mig": (2.0, 600.0),
        "static": (1.0, 120.0),
        "day-night": (1.0, 0.0),
        "dynamic": (1.0, 0.0),
        "lookahead": (1.0, 1200.0),
    }
    frame = pd.DataFrame(
        [{**base, "method": m, "energy_j": e, "avg_tardiness_s": t} for m, (e, t) in values.items()]
    )
    frame.loc[frame["method"] == "static", "configuration"] = "3"
    block = summarize(frame, "paper")
    assert block["table3_extra"]["et_coefficient_per_j"] == pytest.approx(1.2)
    assert block["table3"] == pytest.approx(
        {
            "no-mig": 12.4 / 2.2,
            "static": 3.2 / 2.2,
            "day-night": 1.2 / 2.2,
            "dynamic": 1.2 / 2.2,
            "lookahead": 21.2 / 2.2,
        }
    )
    # P1's order needs dynamic strictly below day-night: a tie does not count
    assert block["table3_extra"]["paper_order_holds"] is False
    assert block["table3_extra"]["improvements"]["dynamic_vs_no-mig"]["ratio_of_means"] == pytest.approx(
        1 - 1.2 / 12.4
    )


def test_every_method_saw_the_same_days(rows: pd.DataFrame) -> None:
    days = rows[rows["kind"] == "day"]
    for _, variant in days.groupby("variant"):
        jobs = variant.pivot_table(index="day", columns="method", values="jobs")
        assert (jobs.nunique(axis=1) == 1).all()  # common random numbers: same queue per day for every method
    # the deadline rule and the GPU keep the jobs of a day
    first = days[days["day"] == 0].groupby("variant")["jobs"].first()
    assert first["paper"] == first["paper+slice-aware"] == first["paper+h200-141gb"]
    assert first["literal"] < first["paper"] / 1.5  # x1 against x2.5 the arrival rate


def test_array_columns(rows: pd.DataFrame) -> None:
    days = rows[(rows["kind"] == "day") & (rows["variant"] == "paper")]
    per_hour = stacked(days, "repartitions_per_hour")
    assert per_hour.shape == (len(days), 24)
    assert (per_hour.sum(axis=1) == days["repartitions"].to_numpy()).all()
    night = days[days["method"] == "day-night"]
    assert (stacked(night, "repartitions_per_hour")[:, [5, 17]] == 1).all()  # 05:00 and 17:00
    time_s = stacked(days, "configuration_time_s")
    assert time_s.shape == (len(days), 6, 12)
    mig = (days["method"] != "no-mig").to_numpy()
    np.testing.assert_allclose(time_s[mig].sum(axis=(1, 2)), 86_400.0)  # every second in some configuration
    assert (time_s[~mig] == 0).all()  # the MIG-disabled GPU is none of the 12
    static = stacked(days[days["method"] == "static"], "configuration_time_s")
    assert (static[:, :, 2] == 4 * 3600.0).all()  # static = the third configuration of the A100 (its role)


def test_report_writes_figures(rows: pd.DataFrame, tmp_path: Path) -> None:
    text = Table3Study().report(rows, tmp_path)
    assert "Table III" in text and "P1 ET" in text and "Both presets side by side" in text
    assert "Deadline rule" in text and "with the DQN improved by rollouts" in text
    assert "P1 order (DQN + rollout)" in text
    assert (tmp_path / "table3_repartitions_per_hour.png").is_file()
    assert (tmp_path / "table3_fig11_dynamic.png").is_file()
    assert "sensitivity" in text and "x1-slack2-3" in text and "P1 order" in text
    assert (tmp_path / "table3_sensitivity_load.png").is_file()


def test_sensitivity_cells_cover_conditions_and_methods() -> None:
    study = Table3Study()
    base = {"no-mig", "static", "static-best", "day-night"}
    for scale, days, methods in (("quick", 20, base), ("paper", 100, base | {"lookahead"})):
        cells = [c for c in study.cells(scale) if isinstance(c, Table3SensCell)]  # type: ignore[arg-type]
        assert {c.condition for c in cells} == {"x1", "x2", "x2.5", "x3", "x4", "x1-slack2-3"}
        assert {c.method.label for c in cells} == methods
        for condition in {c.condition for c in cells}:
            for method in methods:
                mine = [c for c in cells if c.condition == condition and c.method.label == method]
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
    assert set(full["table3_sensitivity"]) == {"x1", "x2.5", "x1-slack2-3"}


def test_sensitivity_repeats_the_presets_days(rows: pd.DataFrame) -> None:
    sens = rows[rows["kind"] == "sens-day"]
    main = rows[rows["kind"] == "day"]
    columns = ["day", "energy_j", "avg_tardiness_s", "jobs"]
    for condition, variant in (("x1", "literal"), ("x2.5", "paper")):
        for method in ("no-mig", "static", "static-best", "day-night"):
            # the preset's workload, days, seeds and selection days -> identical results
            ours = sens[(sens["condition"] == condition) & (sens["method"] == method)][columns].sort_values(
                "day"
            )
            theirs = main[(main["variant"] == variant) & (main["method"] == method)][columns].sort_values(
                "day"
            )
            assert ours.to_numpy().tolist() == theirs.to_numpy().tolist()
    jobs = sens.pivot_table(index="day", columns="condition", values="jobs", aggfunc="first")
    assert (jobs["x1-slack2-3"] == jobs["x1"]).all()  # looser deadlines keep the same jobs
    per_day = sens.groupby(["condition", "day"])["jobs"].nunique()
    assert (per_day == 1).all()  # every method of a condition saw the same queue
    block = Table3Study().summarize(rows)["table3_sensitivity"]
    best = sens[sens["method"] == "static-best"]
    for condition, entry in block.items():
        assert (
            best.loc[best["condition"] == condition, "configuration"] == entry["static_best_configuration"]
        ).all()
        assert entry["days"] == 2 and set(entry["et"]) == {"no-mig", "static", "static-best", "day-night"}
    assert block["x1-slack2-3"]["deadline_slack"] == [2.0, 3.0] and block["x2.5"]["rate_multiplier"] == 2.5


def test_sensitivity_block_by_hand() -> None:
    # One day, three pooled methods: energies 2, 1, 1 J; tardiness 600, 120, 0 s = 10, 2, 0 min.
    # a = mean tardiness / (2 mean energy) = 4 / (2 * 4/3) = 1.5; ET = (a x + y) / (a + 1):
    # no-mig (3 + 10) / 2.5 = 5.2, static (1.5 + 2) / 2.5 = 1.4, day-night 1.5 / 2.5 = 0.6.
    # static-best (energy 1 J, 1500 s = 25 min) is scored with that a: (1.5 + 25) / 2.5 = 10.6.
    base = {
        "kind": "sens-day",
        "condition": "x2",
        "rate_multiplier": 2.0,
        "slack_low": 1.0,
        "slack_high": 1.5,
        "day": 0,
        "jobs": 10,
        "late_jobs": 1,
        "idle_share": 0.25,
    }
    frame = pd.DataFrame(
        [
            {**base, "method": "no-mig", "energy_j": 2.0, "avg_tardiness_s": 600.0, "configuration": ""},
            {**base, "method": "static", "energy_j": 1.0, "avg_tardiness_s": 120.0, "configuration": "3"},
            {**base, "method": "day-night", "energy_j": 1.0, "avg_tardiness_s": 0.0, "configuration": ""},
            {
                **base,
                "method": "static-best",
                "energy_j": 1.0,
                "avg_tardiness_s": 1500.0,
                "configuration": "4",
            },
        ]
    )
    entry = sensitivity_block(frame)["x2"]
    assert entry["et_coefficient_per_j"] == pytest.approx(1.5)
    assert entry["et"] == pytest.approx({"no-mig": 5.2, "static": 1.4, "static-best": 10.6, "day-night": 0.6})
    assert entry["paper_order_holds"] is True  # 5.2 > 1.4 > 0.6
    assert entry["paper_order_holds_best"] is False  # the best static's 10.6 is above no-mig's 5.2
    assert entry["static_best_configuration"] == "4" and entry["detail"]["no-mig"]["late_share"] == 0.1
    assert entry["detail"]["no-mig"]["busy_share"] == 0.75
    paired = entry["paired_differences"]["static - day-night"]  # 1.4 - 0.6 on the single day
    assert paired["mean"] == pytest.approx(0.8) and paired["days"] == 1


def test_sensitivity_lookahead_cell() -> None:
    cell = Table3SensCell(Method("lookahead"), 0, 0, 1, 2025, 1.0, (2.0, 3.0), 1, 1)
    assert cell.key == "sens/x1-slack2-3/lookahead/b000"
    (row,) = run_sensitivity_cell(cell)
    assert row["kind"] == "sens-day" and row["method"] == "lookahead" and row["jobs"] > 0
    assert row["slack_low"] == 2.0 and row["energy_j"] > 0


def test_bound_rows_lie_below_every_method_on_their_day(rows: pd.DataFrame) -> None:
    bounds = rows[rows["kind"] == "bound"]
    assert set(bounds["variant"]) == {"paper", "literal"}  # the variants that are not extra
    assert sorted(bounds.loc[bounds["variant"] == "paper", "day"]) == [0, 1]
    days = rows[rows["kind"] == "day"]
    for (variant, day), bound in bounds.groupby(["variant", "day"]):
        mine = days[(days["variant"] == variant) & (days["day"] == day)]
        assert len(mine) >= 5
        assert (mine["energy_j"] >= float(bound["bound_energy_j"].iloc[0])).all()
        a = float(bound["bound_et_coefficient_per_j"].iloc[0])
        et = (a * mine["energy_j"] + mine["avg_tardiness_s"] / 60.0) / (a + 1.0)
        assert (et >= float(bound["bound_et"].iloc[0])).all()


def test_the_bound_block_and_its_report(rows: pd.DataFrame, tmp_path: Path) -> None:
    summary = Table3Study().summarize(rows)
    block = summary["presets"]["paper"]["table3_bound"]
    assert block["days"] == 2 and block["resolution_s"] == 3600.0
    assert set(block["methods"]) >= {"no-mig", "static", "day-night", "dynamic", "dynamic-rollout"}
    for values in block["methods"].values():
        assert values["gap_to_bound"] >= 0 and values["et_gap_to_bound"] >= 0
        assert values["gap_ci95"][0] <= values["gap_to_bound"] <= values["gap_ci95"][1]
    # gap by hand for no-mig: the mean over the two days of energy / bound − 1
    days = rows[(rows["kind"] == "day") & (rows["variant"] == "paper") & (rows["method"] == "no-mig")]
    bounds = rows[(rows["kind"] == "bound") & (rows["variant"] == "paper")].set_index("day")
    ratio = days.set_index("day")["energy_j"] / bounds["bound_energy_j"] - 1.0
    assert block["methods"]["no-mig"]["gap_to_bound"] == pytest.approx(float(ratio.mean()))
    text = Table3Study().report(rows, tmp_path)
    assert "How far from the best possible" in text and "energy above its bound" in text


def test_bound_days_options() -> None:
    def bound_days(study: Table3Study, scale: str) -> dict[str, int]:
        cells = [c for c in study.cells(scale) if isinstance(c, Table3Cell) and c.bound_resolution_s]
        return {v: sum(c.days for c in cells if c.variant.name == v) for v in {c.variant.name for c in cells}}

    assert bound_days(Table3Study(), "quick") == {"paper": 10, "literal": 10}
    assert bound_days(Table3Study(), "paper") == {"paper": 100, "literal": 100}
    assert bound_days(Table3Study(paper_bound_days=None), "paper") == {"paper": 500, "literal": 500}
    assert bound_days(Table3Study(quick_bound_days=0), "quick") == {}
    with pytest.raises(ConfigError, match="quick_bound_days must be >= 0"):
        Table3Study(quick_bound_days=-1)
