"""Interactive views of reproduce's raw rows (wattsched.studies.views) on small tables of each study's
shape: the right figures, bar heights equal to hand-computed means, ET pooled as the study pools it.
(Table II on real rows: test_html.py.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wattsched.experiments.study import STUDY_VIEWS
from wattsched.metrics import et_coefficient, et_values
from wattsched.studies.views import with_et


def _bars(figure, name: str | None = None) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """x -> height of the first visible bar trace (or the one called ``name``)."""
    for trace in figure.data:
        if trace.type == "bar" and trace.visible is not False and (name is None or trace.name == name):
            return dict(zip(trace.x, trace.y, strict=True))
    raise AssertionError("no such trace")


def test_with_et_pools_over_the_reference_rows_only() -> None:
    rows = pd.DataFrame(
        {
            "method": ["a", "a", "b", "ours"],
            "energy_j": [1e6, 3e6, 2e6, 9e6],
            "avg_tardiness_s": [60.0, 180.0, 120.0, 0.0],
        }
    )
    frame = with_et(rows, column="method", pool=("a", "b"))
    a = et_coefficient([1e6, 3e6, 2e6], [60.0, 180.0, 120.0])  # "ours" is scored, not pooled
    assert frame["et"].tolist() == pytest.approx(
        list(et_values(rows["energy_j"], rows["avg_tardiness_s"], a))
    )


def _table3_rows() -> pd.DataFrame:
    rows = []
    for method, energy_j in (
        ("no-mig", 8e6),
        ("static", 7e6),
        ("day-night", 9e6),
        ("dynamic", 6e6),
        ("lookahead", 5e6),
    ):
        for day in range(3):
            row = {
                "kind": "day",
                "method": method,
                "day": day,
                "energy_j": energy_j + day * 1e5,
                "avg_tardiness_s": 30.0 * (day + 1),
                "late_jobs": float(day),
                "repartitions": 2.0,
                "condition": None,
            }
            row["repartitions_per_hour"] = [float(h % 3 == 0) for h in range(24)]
            rows.append(row)
    for condition in ("x1", "x2"):
        for method in ("no-mig", "static"):
            rows.append(
                {
                    "kind": "sens-day",
                    "method": method,
                    "day": 0,
                    "energy_j": 5e6,
                    "avg_tardiness_s": 60.0,
                    "late_jobs": 0.0,
                    "repartitions": 0.0,
                    "condition": condition,
                }
            )
    rows.append({"kind": "selection", "method": "static", "day": -1, "et": 1.0})
    return pd.DataFrame(rows)


def test_table3_views() -> None:
    views = STUDY_VIEWS.make("table3", rows=_table3_rows())
    titles = [title for title, _ in views]
    assert titles[0].startswith("Table III") and titles[1].startswith("Repartitions per hour")
    assert titles[2].startswith("Load sensitivity") and len(views) == 3
    days = _table3_rows().query("kind == 'day'")
    expected = with_et(days, column="method", pool=("no-mig", "static", "day-night", "dynamic"))
    means = expected.groupby("method")["et"].mean()
    assert _bars(views[0][1]) == pytest.approx(means.to_dict())
    hours = views[1][1].data[0]
    assert list(hours.x) == list(range(24)) and list(hours.y) == [float(h % 3 == 0) for h in range(24)]


def test_real_workloads_views() -> None:
    rows = pd.DataFrame(
        [
            {
                "part": "in-config",
                "workload": w,
                "policy": p,
                "method": "",
                "hour": -1,
                "rate_profile_per_min": np.nan,
                "energy_j": e,
                "avg_tardiness_s": 60.0,
                "preemptions": 1.0,
            }
            for w in ("synthetic", "philly")
            for p, e in (("edf-fs", 2e6), ("llf", 4e6))
        ]
        + [
            {
                "part": "profile",
                "workload": "profile:p1",
                "policy": "",
                "method": "",
                "hour": h,
                "rate_profile_per_min": 0.1 * h,
                "energy_j": np.nan,
                "avg_tardiness_s": np.nan,
                "preemptions": np.nan,
            }
            for h in range(24)
        ]
    )
    views = STUDY_VIEWS.make("real-workloads", rows=rows)
    assert [t for t, _ in views] == [
        "Policies on replayed and synthetic workloads",
        "Hourly arrival profiles",
    ]
    assert _bars(views[0][1], "llf") == pytest.approx(
        {"synthetic": et_for(4e6, 2e6), "philly": et_for(4e6, 2e6)}
    )
    assert list(views[1][1].data[0].y) == pytest.approx([0.1 * h for h in range(24)])


def et_for(energy_j: float, other_j: float) -> float:
    """ET of a run in a two-run pool (tardiness 1 min each)."""
    a = et_coefficient([energy_j, other_j], [60.0, 60.0])
    return float(et_values([energy_j], [60.0], a)[0])


def test_dvfs_views_show_the_saving_of_dvfs_on_against_off() -> None:
    rows = []
    for l in (1, 16):
        for dvfs, energy_j in ((False, 100.0), (True, 70.0 if l == 1 else 80.0)):
            rows.append(
                {
                    "mode": "offline",
                    "util": 1.0,
                    "l": l,
                    "replicate": 0,
                    "algo": "edl",
                    "theta": 1.0,
                    "dvfs": dvfs,
                    "grouping": "sorted",
                    "energy_total_j": energy_j,
                    "gpu": "",
                    "app": "",
                    "saving_wide": np.nan,
                    "saving_narrow": np.nan,
                }
            )
    rows.append(
        {
            "mode": "fit",
            "util": np.nan,
            "l": -1,
            "replicate": -1,
            "algo": "",
            "theta": np.nan,
            "dvfs": False,
            "grouping": "",
            "energy_total_j": np.nan,
            "gpu": "gtx1080ti",
            "app": "BS",
            "saving_wide": 0.25,
            "saving_narrow": 0.05,
        }
    )
    views = STUDY_VIEWS.make("dvfs", rows=pd.DataFrame(rows))
    titles = [t for t, _ in views]
    assert titles[0].startswith("Offline EDL") and titles[-1].startswith("Optimal single-task saving")
    assert _bars(views[0][1], "1, sorted") == pytest.approx({"1": 30.0})
    assert _bars(views[0][1], "16, sorted") == pytest.approx({"1": 20.0})
    assert _bars(views[-1][1], "gtx1080ti, saving_wide") == pytest.approx({"BS": 25.0})
