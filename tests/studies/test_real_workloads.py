"""The real-workloads study: cells, rate/load matching of replays, summary, report and figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from wattsched.errors import ConfigError
from wattsched.experiments.study import STUDIES
from wattsched.studies.real_workloads import WORKLOADS, RealWorkloadsStudy
from wattsched.studies.real_workloads_analysis import kendall_tau, report, summarize

POLICIES = ["edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf"]


@pytest.fixture(scope="module")
def study(unshipped: Callable[[str], Path]) -> RealWorkloadsStudy:
    # The Alibaba pod list is not shipped: the folder that holds it must also hold the rest.
    folder = unshipped("traces/openb_pod_list_default.csv").parents[1]
    return RealWorkloadsStudy(iterations=1, data_dir=str(folder), configurations=[1, 3])


@pytest.fixture(scope="module")
def rows(study: RealWorkloadsStudy) -> pd.DataFrame:
    return pd.DataFrame([row for cell in study.cells("quick") for row in study.run_cell(cell)])


def test_registered_and_cells(study: RealWorkloadsStudy) -> None:
    import wattsched.studies  # noqa: F401  (registers the study)

    assert "real-workloads" in STUDIES.available()
    cells = study.cells("quick")
    assert [c.key for c in cells] == ["profiles/i000", *[f"{w}/i000" for w in WORKLOADS]]
    assert cells == study.cells("quick")  # deterministic
    by_key = {c.key: c for c in cells}
    assert 20 <= by_key["philly/i000"].trace_day < 105 and 115 <= by_key["alibaba/i000"].trace_day < 149
    assert len(RealWorkloadsStudy(data_dir=study.data_dir and str(study.data_dir)).cells("quick")) == 22


def test_replays_match_the_synthetic_day(rows: pd.DataFrame) -> None:
    days = rows[rows["part"] == "in-config"].drop_duplicates("workload").set_index("workload")
    base = days.loc["synthetic"]
    for workload in ("philly", "philly-measured"):
        # Philly days are dense: thinned to exactly the synthetic day's job count, at its offered load.
        assert days.loc[workload, "jobs"] == base["jobs"]
        assert days.loc[workload, "offered_load"] == pytest.approx(base["offered_load"])
    for workload in ("alibaba", "alibaba-measured"):
        assert days.loc[workload, "jobs"] <= base["jobs"]
        assert days.loc[workload, "offered_load"] == pytest.approx(base["offered_load"])
    # The measured variant of the synthetic day keeps arrivals and classes (same seed), not durations.
    assert days.loc["synthetic-measured", "jobs"] == base["jobs"]
    assert days.loc["synthetic-measured", "inference_share"] == base["inference_share"]


def test_rows_are_flat_and_complete(rows: pd.DataFrame, study: RealWorkloadsStudy) -> None:
    runs = rows[rows["part"] == "in-config"]
    assert len(runs) == len(WORKLOADS) * len(POLICIES) * 2
    reps = rows[rows["part"] == "repartition"]
    assert sorted(set(reps["method"])) == ["day-night", "no-mig", "static"]
    assert (reps.loc[reps["method"] == "day-night", "repartitions"] >= 1).all()
    profiles = rows[rows["part"] == "profile"]
    assert len(profiles) == 3 * 24
    # Derived profiles are scaled to P1's mean rate (papers.md §A.3.1: Σλ·60 ≈ 207 jobs/day).
    means = profiles.groupby("workload")["rate_profile_per_min"].mean()
    assert means.to_numpy() == pytest.approx([means["profile:p1-fig5"]] * 3)
    for row in study.run_cell(study.cells("quick")[0]):
        assert all(isinstance(v, str | int | float) for v in row.values())


def test_summary_and_report(rows: pd.DataFrame, study: RealWorkloadsStudy, tmp_path: Path) -> None:
    block = study.summarize(rows)["real_workloads"]
    assert block["available"] is True
    assert set(block["in_config"]) == set(WORKLOADS)
    for workload, order in block["ranking"].items():
        assert sorted(order) == sorted(POLICIES)
        ets = [block["in_config"][workload][p] for p in order]
        assert ets == sorted(ets)
    assert block["rank_agreement_vs_synthetic"]["synthetic"] == 1.0
    assert set(block["repartitioning"]["philly"]) == {"no-mig", "static", "day-night"}
    text = study.report(rows, tmp_path)
    assert text.startswith("## Real workloads")
    assert "What changed against the synthetic baseline" in text and "philly-measured" in text
    assert (tmp_path / "real_workloads_et.png").stat().st_size > 0
    assert (tmp_path / "real_workloads_profiles.png").stat().st_size > 0


def test_without_data(tmp_path: Path) -> None:
    empty = pd.DataFrame()
    assert summarize(empty, None) == {
        "real_workloads": {"available": False, "reason": "data files (traces/, mig-profiles/) not found"}
    }
    assert "Not run" in report(empty, None, tmp_path)
    with pytest.raises(ConfigError, match="lacks"):
        RealWorkloadsStudy(data_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="unknown"):
        RealWorkloadsStudy(workloads=["borg"])


def test_kendall_tau_by_hand() -> None:
    assert kendall_tau(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert kendall_tau(["a", "b", "c"], ["c", "b", "a"]) == -1.0
    # One swapped pair of three: 2 concordant, 1 discordant → (2 − 1) / 3.
    assert kendall_tau(["a", "b", "c"], ["b", "a", "c"]) == pytest.approx(1 / 3)
