"""The run file (wattsched.viz.timeline): built from a recorded run, read back, and its power series.

The hand-computed run is the repartition case of tests/mig/test_simulator.py: A runs on config 1's 7g slice
over [0, 50), the GPU repartitions to config 2 at t = 50 (blackout [50, 54) at P(0) = 40 W), then B runs on
4g.20gb@1 over [54, 354) and A on 3g.20gb@5 over [54, 174). Energy 86,307 J.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from wattsched.errors import InputError
from wattsched.hardware.mig import default_gpu
from wattsched.io import write_table
from wattsched.mig import MigSimulation, simulate
from wattsched.viz.timeline import (
    KIND_COLUMN,
    TIMELINE_COLUMNS,
    power_series,
    power_table,
    read_timeline,
    slice_placement,
    timeline_frame,
)
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling

BIG = 9999.0
P_W = (40.0, 119.0, 160.0, 205.3, 243.9, 247.7, 248.5, 248.5)


def _job(name: str, arrival: float, deadline: float, d3: float, d4: float, d7: float) -> Job:
    return Job(name, arrival, deadline, JobKind.TRAINING, Scaling.MEASURED, (BIG, BIG, d3, d4, d7), BIG)


def _repartitioned_run() -> tuple[pd.DataFrame, float]:
    jobs = [_job("A", 0, 300, 240, 160, 100), _job("B", 50, 348, 400, 300, 150)]
    sim = MigSimulation(jobs, 1, "edf-ss-restricted", record_jobs=True)
    changes = []
    while sim.advance():
        if sim.now_s == 50.0 and sim.repartition(2):
            changes.append((sim.now_s, 2))
    result = sim.result()
    return timeline_frame(result, repartitions=changes, jobs=jobs), result.energy_j


def test_timeline_rows_of_a_hand_computed_run() -> None:
    timeline, _ = _repartitioned_run()
    assert tuple(timeline.columns) == (*TIMELINE_COLUMNS, KIND_COLUMN)
    rows = [tuple(r) for r in timeline.itertuples(index=False, name=None)]
    assert rows == [
        ("A", "run", 0.0, 50.0, "1", 0, "7g.40gb", 0, 8, 7, "training"),
        ("", "repartition", 50.0, 54.0, "2", -1, "", -1, 0, 0, ""),
        ("B", "run", 54.0, 354.0, "2", 0, "4g.20gb", 0, 4, 4, "training"),
        ("A", "run", 54.0, 174.0, "2", 1, "3g.20gb", 4, 4, 3, "training"),
        ("", "end", 354.0, 354.0, "", -1, "", -1, 0, 0, ""),
    ]


def test_power_series_of_the_hand_computed_run() -> None:
    timeline, energy_j = _repartitioned_run()
    series = power_series(timeline)
    assert series["start_s"].tolist() == [0.0, 50.0, 54.0, 174.0, 354.0]
    assert series["busy_units"].tolist() == [7, 0, 7, 4, 0]
    assert series["power_w"].tolist()[:-1] == [248.5, 40.0, 248.5, 243.9]
    # 248.5*50 + 40*4 + 248.5*120 + 243.9*180 = 12425 + 160 + 29820 + 43902
    assert series["energy_j"].iloc[-1] == pytest.approx(86307.0)
    assert series["energy_j"].iloc[-1] == pytest.approx(energy_j, rel=1e-12)
    assert series["energy_j"].tolist()[:3] == pytest.approx([0.0, 12425.0, 12585.0])


@pytest.mark.parametrize("configuration", [1, 3, 5, 12, "no-mig"])
@pytest.mark.parametrize("policy", ["edf-fs", "edf-ss-restricted", "llf"])
def test_power_series_integrates_to_the_simulator_energy(configuration: int | str, policy: str) -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=2), 7)
    result = simulate(jobs, configuration, policy, horizon_s=7200, record_jobs=True)
    series = power_series(timeline_frame(result))
    assert series["energy_j"].iloc[-1] == pytest.approx(result.energy_j, rel=1e-12)
    assert series["start_s"].iloc[-1] == pytest.approx(result.end_s)
    # Time at each busy level equals the simulator's own account.
    widths = series["start_s"].diff().shift(-1).fillna(0.0)
    for units, busy_s in enumerate(result.busy_time_s):
        assert widths[series["busy_units"] == units].sum() == pytest.approx(busy_s, abs=1e-6)


def test_idle_tail_up_to_the_horizon_counts() -> None:
    # One job of 100 s on 7g; horizon 1000 s: 248.5*100 + 40*900 = 60850 J.
    result = simulate([_job("A", 0, 500, 300, 200, 100)], 1, "edf-fs", horizon_s=1000, record_jobs=True)
    series = power_series(timeline_frame(result))
    assert series["energy_j"].iloc[-1] == pytest.approx(60850.0) == pytest.approx(result.energy_j)


def test_timeline_needs_records() -> None:
    result = simulate([_job("A", 0, 500, 300, 200, 100)], 1, "edf-fs")
    with pytest.raises(ValueError, match="record_jobs"):
        timeline_frame(result)


def test_slice_placement_and_power_lookup() -> None:
    config = default_gpu().configuration(4)  # 4g.20gb@0 + 1g.5gb@4 + 1g.5gb@5 + 1g.10gb@6
    place = slice_placement(config, 5)
    assert (place.slice_index, place.profile, place.size, place.compute) == (2, "1g.5gb", 1, 1)
    assert slice_placement(config, 6).size == 2  # 1g.10gb holds two memory slots
    with pytest.raises(InputError, match="no slice at memory slot 2"):
        slice_placement(config, 2)
    assert list(power_table(default_gpu(), per_kind=True).power_w) == list(P_W)  # one curve: per kind = P(u)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_run_file_round_trip(tmp_path: Path, suffix: str) -> None:
    timeline, _ = _repartitioned_run()
    path = tmp_path / f"run{suffix}"
    write_table(timeline, path)
    again = read_timeline(path)
    pd.testing.assert_frame_equal(again, timeline)


def _write(tmp_path: Path, frame: pd.DataFrame) -> Path:
    path = tmp_path / "run.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("change", "row", "column", "message"),
    [
        (lambda f: f.drop(columns=["compute"]), None, None, "missing column(s) compute"),
        (lambda f: f.assign(kind=["run", "cut", "run", "run", "end"]), 2, "kind", "unknown kind 'cut'"),
        (lambda f: f.assign(start_s=["0", "x", "54", "54", "354"]), 2, "start_s", "not a finite number"),
        (lambda f: f.assign(start_s=[-1.0, 50, 54, 54, 354]), 1, "start_s", "must be >= 0"),
        (lambda f: f.assign(end_s=[50.0, 54, 10, 174, 354]), 3, "end_s", "must be >= start_s"),
        (lambda f: f.assign(compute=[7, 0, 0, 3, 0]), 3, "compute", "must be >= 1 on a run row"),
        (lambda f: f.assign(compute=[7.5, 0, 4, 3, 0]), 1, "compute", "not a whole number"),
        (lambda f: f.assign(job_id=["A", "", "", "A", ""]), 3, "job_id", "must not be empty on a run row"),
        (lambda f: f.iloc[0:0], None, None, "no rows"),
    ],
)
def test_bad_run_files_name_the_row_and_column(tmp_path: Path, change, row, column, message) -> None:  # type: ignore[no-untyped-def]
    timeline, _ = _repartitioned_run()
    path = _write(tmp_path, change(timeline))
    with pytest.raises(InputError) as caught:
        read_timeline(path)
    assert message in str(caught.value) and str(path) in str(caught.value)
    assert (caught.value.row, caught.value.column) == (row, column)


def test_overlapping_stretches_are_refused() -> None:
    timeline, _ = _repartitioned_run()
    doubled = pd.concat([timeline, timeline[timeline["kind"] == "run"]], ignore_index=True)
    with pytest.raises(InputError, match="more than the 7"):
        power_series(doubled)


def test_per_kind_power_on_the_h200_needs_the_job_kinds() -> None:
    from wattsched.hardware.catalogue import load_gpu

    gpu = load_gpu("h200-141gb")
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=2), 7)
    result = simulate(jobs, 3, "edf-fs", gpu=gpu, horizon_s=7200, record_jobs=True)
    with_kinds = power_series(timeline_frame(result, gpu, jobs=jobs), gpu)
    assert with_kinds["energy_j"].iloc[-1] == pytest.approx(result.energy_j, rel=1e-12)
    # Without kinds the default curve (transformer inference) stands in for training too: not the same.
    without = power_series(timeline_frame(result, gpu), gpu)
    assert without["energy_j"].iloc[-1] != pytest.approx(result.energy_j, rel=1e-3)
