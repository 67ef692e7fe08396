"""``wattsched.mig.frames.records_frame``: one row per job with arrival, deadline, kind, slice and energy
(what ``mig run --jobs-out`` writes)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from wattsched.cli import main
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig import records_frame
from wattsched.mig.frames import RECORD_COLUMNS, idle_energy_j
from wattsched.mig.simulator import simulate
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling
from wattsched.workload.traces import write_trace


@pytest.mark.parametrize(
    ("gpu_name", "config"), [("a100-40gb", 3), ("a100-40gb", "no-mig"), ("h200-141gb", 6), ("a100-40gb", 1)]
)
def test_energy_columns_add_up_to_the_run(gpu_name: str, config: int | str) -> None:
    gpu = load_gpu(gpu_name)
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.6, hours=2), 5)
    result = simulate(jobs, gpu.configuration(config), "edf-ss", gpu=gpu, horizon_s=7200.0, record_jobs=True)
    frame = records_frame(result, jobs, gpu)
    assert list(frame.columns) == list(RECORD_COLUMNS) and len(frame) == len(jobs)
    assert (frame["energy_j"] > 0).all()
    assert frame["energy_j"].sum() + idle_energy_j(result, gpu) == pytest.approx(result.energy_j, rel=1e-9)
    by_id = {job.job_id: job for job in jobs}
    for row in frame.itertuples():
        job = by_id[row.job_id]
        assert (row.arrival_s, row.deadline_s, row.kind) == (job.arrival_s, job.deadline_s, job.kind.value)
        assert row.tardiness_s == pytest.approx(max(0.0, row.completion_s - row.deadline_s))
        assert row.compute in gpu.compute_sizes or (config == "no-mig" and row.compute == 7)
        assert row.slice


def test_hand_computed_energy_of_two_jobs() -> None:
    """Two linear jobs alone on the no-MIG A100 one after another: each draws the full-GPU power P(7) for its
    own run time (CONTRACT §4: P(0) = 40 W, P(7) = 248.5 W), so its energy is 248.5 W times that time."""
    gpu = load_gpu("a100-40gb")
    durations = (700.0, 350.0, 700.0 / 3, 175.0, 100.0)
    jobs = [
        Job("a", 0.0, 1000.0, JobKind.TRAINING, Scaling.LINEAR, durations, 100.0),
        Job("b", 500.0, 2000.0, JobKind.INFERENCE, Scaling.LINEAR, durations, 100.0),
    ]
    result = simulate(
        jobs, gpu.configuration("no-mig"), "edf-fs", gpu=gpu, horizon_s=1000.0, record_jobs=True
    )
    frame = records_frame(result, jobs, gpu).set_index("job_id")
    assert frame.loc["a", "energy_j"] == pytest.approx(248.5 * 100.0)
    assert frame.loc["b", "energy_j"] == pytest.approx(248.5 * 100.0)
    assert list(frame["slice"]) == ["full", "full"] and list(frame["kind"]) == ["training", "inference"]
    assert idle_energy_j(result, gpu) == pytest.approx(40.0 * 800.0)  # 0..1000 s less 200 s busy
    assert result.energy_j == pytest.approx(2 * 248.5 * 100.0 + 40.0 * 800.0)


def test_shared_power_is_split_by_compute_slices() -> None:
    """Two jobs at once on configuration 3 of the A100: whatever the board draws while both run is split in
    proportion to their slices' compute sizes."""
    gpu = load_gpu("a100-40gb")
    config = gpu.configuration(3)
    sizes = sorted({s.compute for s in config.slices}, reverse=True)
    jobs = generate_jobs(WorkloadSpec(rate_per_min=2.0, hours=0.2), 9)
    result = simulate(jobs, config, "edf-ss", gpu=gpu, horizon_s=720.0, record_jobs=True)
    frame = records_frame(result, jobs, gpu)
    assert set(frame["compute"]) <= set(sizes)
    assert frame["energy_j"].sum() == pytest.approx(result.energy_j - idle_energy_j(result, gpu), rel=1e-9)


def test_without_records_it_refuses() -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 1)
    result = simulate(jobs, 3, "edf-fs")
    with pytest.raises(ValueError, match="record_jobs=True"):
        records_frame(result, jobs)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_jobs_out_is_records_frame(tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 4)
    trace = tmp_path / "t.csv"
    write_trace(jobs, trace)
    out = tmp_path / f"jobs{suffix}"
    assert (
        main(
            [
                "mig",
                "run",
                "--config",
                "5",
                "--policy",
                "llf",
                "--trace",
                str(trace),
                "--jobs-out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    written = pd.read_csv(out, keep_default_na=False) if suffix == ".csv" else pd.read_parquet(out)
    gpu = load_gpu("a100-40gb")
    result = simulate(jobs, 5, "llf", gpu=gpu, horizon_s=max(j.arrival_s for j in jobs), record_jobs=True)
    expected = records_frame(result, jobs, gpu)
    assert list(written.columns) == list(RECORD_COLUMNS)
    for column in ("arrival_s", "deadline_s", "energy_j", "tardiness_s"):
        assert all(
            math.isclose(a, b, rel_tol=1e-12) for a, b in zip(written[column], expected[column], strict=True)
        )
    assert list(written["slice"]) == list(expected["slice"])
    assert list(written["kind"]) == list(expected["kind"])
