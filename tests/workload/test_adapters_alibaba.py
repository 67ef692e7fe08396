"""The Alibaba 2023 pod-list adapter on the real file (expected numbers from pandas) and on broken files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wattsched.errors import ConfigError, InputError, UnknownNameError
from wattsched.workload.adapters import ADAPTERS, ImportOptions, import_trace
from wattsched.workload.adapters.alibaba2023 import slice_for_gpu_milli
from wattsched.workload.job import JobKind

DAY_S = 86_400.0


@pytest.fixture(scope="module")
def pods_path(unshipped: Callable[[str], Path]) -> Path:
    return unshipped("traces/openb_pod_list_default.csv")


@pytest.fixture(scope="module")
def usable(pods_path: Path) -> pd.DataFrame:
    """Rows the documented rules keep, computed independently of the adapter."""
    raw = pd.read_csv(pods_path)
    gpu = raw[raw["num_gpu"] > 0]
    ran = gpu[gpu["scheduled_time"].notna()]
    censored = (ran["deletion_time"] == raw["deletion_time"].max()) & (ran["pod_phase"] == "Running")
    kept = ran[~censored].copy()
    kept["run_s"] = (kept["deletion_time"] - kept["scheduled_time"]) * kept["num_gpu"].clip(lower=1)
    return kept


def test_registry_lists_every_format() -> None:
    assert ADAPTERS.available() == ["alibaba-2023", "csv", "philly", "sacct"]
    with pytest.raises(UnknownNameError, match="philly"):
        ADAPTERS.make("borg")


def test_whole_file_counts(pods_path: Path, usable: pd.DataFrame) -> None:
    jobs, report = import_trace("alibaba-2023", pods_path)
    assert report.rows_read == 8152  # README: 8,152 pods
    assert report.filtered["cpu_only"] == 1088  # README: num_gpu 0 → 1,088
    # Pending pods (897 in the README) never ran; 36 of them are CPU-only and counted there first.
    assert report.filtered["never_scheduled"] == 861
    assert report.skipped == {}
    assert report.rows_kept == len(jobs) == len(usable)
    assert report.rows_read == report.rows_kept + sum(report.filtered.values())
    # Trace clock: creation_time is already seconds from the trace start (window: whole days around the data).
    assert jobs[0].arrival_s == usable["creation_time"].min() == 0
    assert jobs[-1].arrival_s == usable["creation_time"].max()


def test_one_day_matches_pandas(pods_path: Path, usable: pd.DataFrame) -> None:
    day = usable[usable["creation_time"] // DAY_S == 130]
    jobs, report = import_trace("alibaba-2023", pods_path, ImportOptions(day=130))
    assert len(jobs) == len(day) and report.arrival_rate_per_min == pytest.approx(len(day) / 1440)
    assert min(j.arrival_s for j in jobs) == day["creation_time"].min() - 130 * DAY_S
    for q in (0.1, 0.5, 0.9, 0.99):
        assert report.observed_duration_quantiles_s[f"p{int(q * 100)}"] == pytest.approx(
            day["run_s"].quantile(q)
        )
    by_id = day.set_index("name")
    for job in jobs:
        pod = by_id.loc[job.job_id]
        g = slice_for_gpu_milli(int(pod["gpu_milli"])) if pod["num_gpu"] == 1 else 7
        # Observed run on g; linear: dur_g = dur_1g / g, so dur_7g = run · g / 7.
        assert job.durations_s[4] == pytest.approx(pod["run_s"] * g / 7)
        assert job.kind == (JobKind.INFERENCE if pod["qos"] == "LS" else JobKind.TRAINING)
    assert report.inference_share == pytest.approx((day["qos"] == "LS").mean())


@pytest.mark.parametrize(
    ("milli", "g"),
    [
        (1, 1),
        (143, 1),
        (144, 2),
        (286, 2),
        (287, 3),
        (429, 3),
        (430, 4),
        (500, 4),
        (572, 4),
        (573, 7),
        (1000, 7),
    ],
)
def test_gpu_milli_to_slice(milli: int, g: int) -> None:
    # Smallest g with 7·milli ≤ 1000·g + 5: 7·143 = 1001 ≤ 1005 → 1g; 7·144 = 1008 > 1005 → 2g;
    # 7·572 = 4004 ≤ 4005 → 4g; 7·573 = 4011 > 4005 → no 5g/6g slice, so 7g.
    assert slice_for_gpu_milli(milli) == g


def test_gpu_milli_out_of_range() -> None:
    with pytest.raises(ValueError):
        slice_for_gpu_milli(0)


HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)
ROWS = [
    "p0,1,1,1,1000,,LS,Running,10,110,20",  # kept: 90 s on 7g
    "p1,1,1,0,0,,BE,Running,10,50,10",  # cpu_only
    "p2,1,1,1,500,,BE,Pending,10,50,",  # never_scheduled
    "p3,1,1,1,0,,BE,Failed,10,50,10",  # bad_gpu_milli
    "p4,1,1,1,1500,,BE,Failed,10,50,10",  # bad_gpu_milli
    "p5,1,1,x,100,,BE,Failed,10,50,10",  # bad_num_gpu
    "p6,1,1,1,100,,BE,Failed,soon,50,10",  # bad_time
    "p7,1,1,1,100,,BE,Failed,10,10,30",  # nonpositive_duration
    "p8,1,1,1,100,,XX,Failed,10,50,10",  # unknown_qos
    "p0,1,1,1,100,,BE,Failed,10,50,10",  # duplicate_id
    "p9,1,1,2,1000,,BE,Succeeded,3600,3700,3610",  # kept: 2 GPUs × 90 s folded onto 7g
    "p10,1,1,1,200,,LS,Running,20,4000,30",  # censored_at_trace_end (latest deletion, still running)
]


def test_broken_rows_are_counted_by_reason(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(HEADER + "\n".join(ROWS) + "\n")
    jobs, report = import_trace("alibaba-2023", path)
    assert report.rows_read == 12
    assert report.skipped == {
        "bad_gpu_milli": 2,
        "bad_num_gpu": 1,
        "bad_time": 1,
        "nonpositive_duration": 1,
        "unknown_qos": 1,
        "duplicate_id": 1,
    }
    assert report.filtered == {"cpu_only": 1, "never_scheduled": 1, "censored_at_trace_end": 1}
    assert [j.job_id for j in jobs] == ["p0", "p9"]
    assert jobs[0].durations_s[4] == pytest.approx(90.0) and jobs[0].kind == JobKind.INFERENCE
    assert jobs[1].durations_s[4] == pytest.approx(180.0) and jobs[1].kind == JobKind.TRAINING


def test_missing_column_and_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text("name,num_gpu,gpu_milli,creation_time,deletion_time\np0,1,1000,1,2\n")
    with pytest.raises(InputError, match="column 'scheduled_time'") as info:
        import_trace("alibaba-2023", path)
    assert str(path) in str(info.value)
    path.write_text(HEADER + "p1,1,1,0,0,,BE,Running,10,50,10\n")
    with pytest.raises(InputError, match="no usable rows"):
        import_trace("alibaba-2023", path)


def test_measured_curves_are_drawn_by_class(tmp_path: Path) -> None:
    from wattsched.workload.job import Scaling
    from wattsched.workload.scaling import ScalingCurve

    inference = ScalingCurve(Scaling.MEASURED, "x:m1:inference:b1", (1.0, 1.5, 2.0, 2.5, 3.0))
    training = ScalingCurve(Scaling.MEASURED, "x:m2:training:b1", (1.0, 2.0, 3.0, 4.0, 5.0))
    path = tmp_path / "pods.csv"
    path.write_text(HEADER + "\n".join(ROWS) + "\n")
    jobs, _ = import_trace("alibaba-2023", path, ImportOptions(curves=(inference, training)))
    p0, p9 = jobs
    # p0 (LS → inference) ran 90 s on 7g: dur_1g = 90·S(7) = 270 s, dur_2g = 270 / 1.5 = 180 s; full = 7g.
    assert p0.scaling == Scaling.MEASURED
    assert (*p0.durations_s, p0.dur_full_s) == pytest.approx((270.0, 180.0, 135.0, 108.0, 90.0, 90.0))
    assert p9.durations_s[0] == pytest.approx(180.0 * 5.0)
    with pytest.raises(ConfigError):
        ImportOptions(curves=())


def test_quantiles_are_reported_in_order(pods_path: Path) -> None:
    _, report = import_trace("alibaba-2023", pods_path, ImportOptions(day=120))
    values = list(report.observed_duration_quantiles_s.values())
    assert values == sorted(values) and np.isfinite(values).all()
