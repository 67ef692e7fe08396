"""The Philly adapter on the real file (expected numbers computed here with pandas) and on broken files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.workload.adapters import ImportOptions, import_trace
from wattsched.workload.job import JobKind, Scaling

DAY_S = 86_400.0


@pytest.fixture(scope="module")
def philly_path(repo_data: Path) -> Path:
    return repo_data / "traces" / "philly.csv"


@pytest.fixture(scope="module")
def raw(philly_path: Path) -> pd.DataFrame:
    frame = pd.read_csv(philly_path)
    stamp = pd.to_datetime(frame["timestamp"])
    frame["t_s"] = (stamp - stamp.min().normalize()).dt.total_seconds()
    frame["day"] = (frame["t_s"] // DAY_S).astype(int)
    return frame


def test_whole_file_keeps_every_row_with_its_time_range(philly_path: Path, raw: pd.DataFrame) -> None:
    jobs, report = import_trace("philly", philly_path)
    assert report.rows_read == len(raw) == 82_247  # README: 82,247 jobs
    assert report.rows_kept == len(jobs) == len(raw)
    assert report.skipped == {} and report.filtered == {}
    # Earliest timestamp 2017-09-04 10:30:41 → 10·3600 + 30·60 + 41 s after midnight (day 0).
    assert jobs[0].arrival_s == 37_841.0 == raw["t_s"].min()
    assert jobs[-1].arrival_s == raw["t_s"].max()
    arrivals = np.array([j.arrival_s for j in jobs])
    assert (np.diff(arrivals) >= 0).all()


def test_one_day_matches_pandas(philly_path: Path, raw: pd.DataFrame) -> None:
    day = raw[raw["day"] == 40]
    jobs, report = import_trace("philly", philly_path, ImportOptions(day=40))
    assert report.rows_kept == len(jobs) == len(day)
    assert report.filtered == {"outside_window": len(raw) - len(day)}
    assert report.arrival_rate_per_min == pytest.approx(len(day) / 1440.0)
    arrivals = np.array([j.arrival_s for j in jobs])
    assert arrivals.min() == day["t_s"].min() - 40 * DAY_S and arrivals.max() == day["t_s"].max() - 40 * DAY_S
    # Observed run time (gpu_time: multi-GPU work folded onto one GPU) is the 7g duration (linear scaling).
    dur_7g = np.array([j.durations_s[4] for j in jobs])
    for q in (0.1, 0.5, 0.9, 0.99):
        assert np.quantile(dur_7g, q) == pytest.approx(day["gpu_time"].quantile(q))
        assert report.observed_duration_quantiles_s[f"p{int(q * 100)}"] == pytest.approx(
            day["gpu_time"].quantile(q)
        )
    job = jobs[0]
    assert job.scaling == Scaling.LINEAR
    # Linear: dur_1g = 7·dur_7g, dur_2g = dur_1g / 2, full = dur_7g / 1.06.
    assert job.durations_s[0] == pytest.approx(7 * job.durations_s[4])
    assert job.durations_s[1] == pytest.approx(job.durations_s[0] / 2)
    assert job.dur_full_s == pytest.approx(job.durations_s[4] / 1.06)
    # Duration rule: observed run ≤ 600 s → inference.
    inference = sum(k.kind == JobKind.INFERENCE for k in jobs)
    assert inference == int((day["gpu_time"] <= 600).sum())
    for j in jobs:  # P1 rule: d = a + U(1, 1.5)·dur_7g
        assert j.arrival_s + j.durations_s[4] <= j.deadline_s <= j.arrival_s + 1.5 * j.durations_s[4] + 1e-9


def test_thinning_keeps_exact_rate_and_is_seeded(philly_path: Path, raw: pd.DataFrame) -> None:
    options = ImportOptions(day=40, target_rate_per_min=0.2, max_duration_s=4 * 3600, target_load=0.6, seed=3)
    jobs, report = import_trace("philly", philly_path, options)
    assert len(jobs) == round(0.2 * 1440) == 288
    assert report.rows_read == report.rows_kept + sum(report.skipped.values()) + sum(report.filtered.values())
    assert report.filtered["above_max_duration"] == int((raw["gpu_time"] > 4 * 3600).sum())
    # Offered load Σ dur_7g / horizon is the target.
    assert sum(j.durations_s[4] for j in jobs) / 86_400 == pytest.approx(0.6)
    again, _ = import_trace("philly", philly_path, options)
    assert again == jobs
    other, _ = import_trace("philly", philly_path, ImportOptions(day=40, target_rate_per_min=0.2, seed=4))
    assert {j.job_id for j in other} != {j.job_id for j in jobs}


def test_stretch_rescales_the_clock(philly_path: Path, raw: pd.DataFrame) -> None:
    n = int((raw["day"] == 40).sum())
    jobs, report = import_trace(
        "philly", philly_path, ImportOptions(day=40, target_rate_per_min=0.5, rate_method="stretch")
    )
    factor = (n / 1440.0) / 0.5
    assert len(jobs) == n
    assert report.horizon_s == pytest.approx(DAY_S * factor)
    assert report.arrival_rate_per_min == pytest.approx(0.5)


def test_thinning_cannot_raise_a_rate(philly_path: Path) -> None:
    with pytest.raises(ConfigError, match="stretch"):
        import_trace("philly", philly_path, ImportOptions(day=40, target_rate_per_min=100.0))


BROKEN = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:00:10,100,1,100,a
not a time,100,1,100,a
2017-10-01 00:01:00,,1,0,a
2017-10-01 00:02:00,abc,1,0,a
2017-10-01 00:03:00,-5,1,-5,a
2017-10-01 00:04:00,0,1,0,a
2017-10-01 00:05:00,50,0,0,a
2017-10-01 00:06:00,50,1.5,75,a
2017-10-01 00:07:00,700,2,1400,a
2017-10-01 01:00:00,60,1,60,a

"""


def test_broken_rows_are_counted_by_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.csv"
    path.write_text(BROKEN)
    jobs, report = import_trace("philly", path)
    assert report.rows_read == 10  # the trailing blank line is not a row
    assert report.skipped == {
        "bad_timestamp": 1,
        "bad_duration": 2,
        "nonpositive_duration": 2,
        "bad_num_gpus": 2,
    }
    assert [j.job_id for j in jobs] == ["philly-000001", "philly-000009", "philly-000010"]
    # Row 9: 700 s on 2 GPUs folds to 1400 s on one 7g slice → training; row 10: 60 s → inference.
    assert jobs[1].durations_s[4] == pytest.approx(1400.0) and jobs[1].kind == JobKind.TRAINING
    assert jobs[2].kind == JobKind.INFERENCE and jobs[2].arrival_s == 3600.0
    _, skipping = import_trace("philly", path, ImportOptions(multi_gpu="skip"))
    assert skipping.filtered == {"multi_gpu": 1} and skipping.rows_kept == 2


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty"),
        ("timestamp,duration,num_gpus\n", "no data rows"),
        ("timestamp,num_gpus\n2017-10-01 00:00:10,1\n", "column 'duration'"),
        ("timestamp,duration,num_gpus\nx,1,1\n2017-10-01 00:00:10,0,1\n", "no usable rows"),
    ],
)
def test_unusable_files_name_the_file(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=match) as info:
        import_trace("philly", path)
    assert str(path) in str(info.value)


def test_window_without_jobs_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(BROKEN)
    with pytest.raises(InputError, match="no job arrives"):
        import_trace("philly", path, ImportOptions(day=5))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"day": 1, "start_s": 0.0},
        {"start_s": 10.0, "end_s": 5.0},
        {"deadline_slack": (1.5, 1.0)},
        {"class_rule": "share"},
        {"inference_share": 0.5},
        {"target_load": 0.5, "duration_scale": 2.0},
        {"rate_method": "warp"},
    ],
)
def test_bad_options_are_config_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ImportOptions(**kwargs)  # type: ignore[arg-type]


def test_philly_has_no_source_class(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(BROKEN)
    with pytest.raises(ConfigError, match="no job class"):
        import_trace("philly", path, ImportOptions(class_rule="source"))
    jobs, report = import_trace("philly", path, ImportOptions(class_rule="share", inference_share=1.0))
    assert all(j.kind == JobKind.INFERENCE for j in jobs) and report.inference_share == 1.0
