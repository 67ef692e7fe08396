"""The engine's power-cap option and per-kind power, against schedules and energies computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattsched.hardware import catalogue
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig import simulate
from wattsched.workload.job import Job, JobKind, Scaling

A100_TEXT = (Path(catalogue.__file__).parent / "data" / "gpus" / "a100-40gb.toml").read_text()
# idle 100 W; uncapped 160 + 60 W per busy slice up to 500 W at u = 7; cap 300 W; speed = dynamic power share
# (exponent 1): u = 7 -> (300 - 100) / (500 - 100) = 0.5, u = 4 -> 200 / 240 = 5/6, u <= 3 -> full speed.
POWER = """[power]
idle_w = 100.0
cap_w = 300.0
cap_speed_exponent = 1.0
default_curve = "toy"

[power.curves.toy]
busy_w = [160.0, 220.0, 280.0, 340.0, 400.0, 460.0, 500.0]
source = "made up for a test"
"""


@pytest.fixture(scope="module")
def capped_gpu(tmp_path_factory: pytest.TempPathFactory) -> object:
    head, _, _ = A100_TEXT.partition("[power]")
    path = tmp_path_factory.mktemp("gpu") / "toy.toml"
    path.write_text(head + POWER)
    return load_gpu(path)


def _linear(name: str, deadline: float, dur_1g: float, kind: JobKind = JobKind.TRAINING) -> Job:
    durations = tuple(dur_1g / g for g in (1, 2, 3, 4, 7))
    return Job(name, 0.0, deadline, kind, Scaling.LINEAR, durations, durations[-1] / 1.06)


def test_one_job_at_the_cap_runs_at_half_speed(capped_gpu: object) -> None:
    job = _linear("a", 1000.0, 700.0)  # 100 s on the 7g slice
    capped = simulate([job], 1, "edf-fs", gpu=capped_gpu, power_cap=True, record_jobs=True)  # type: ignore[arg-type]
    assert capped.records is not None and capped.records[0].completion_s == pytest.approx(200.0)
    assert capped.energy_j == pytest.approx(300.0 * 200.0)
    clamped = simulate([job], 1, "edf-fs", gpu=capped_gpu, record_jobs=True)  # type: ignore[arg-type]
    assert clamped.records is not None and clamped.records[0].completion_s == pytest.approx(100.0)
    assert clamped.energy_j == pytest.approx(300.0 * 100.0)  # power clamped to the cap, speed unchanged


def test_the_shared_slow_down_changes_when_a_slice_frees(capped_gpu: object) -> None:
    # Configuration 2 = 4g@0 + 3g@4. A (d 1000) takes the 4g (100 s of work), B (d 2000) the 3g (50 s).
    # [0, 100): u = 7, speed 0.5: B finishes at 100, A has done half. [100, 160): u = 4, speed 5/6: A's 50 s
    # left take 60 s. Energy: 300 W (capped) over 160 s.
    a, b = _linear("A", 1000.0, 400.0), _linear("B", 2000.0, 150.0)
    result = simulate([a, b], 2, "edf-fs", gpu=capped_gpu, power_cap=True, record_jobs=True)  # type: ignore[arg-type]
    assert result.records is not None
    done = {r.job_id: r.completion_s for r in result.records}
    assert done["B"] == pytest.approx(100.0) and done["A"] == pytest.approx(160.0)
    assert result.energy_j == pytest.approx(300.0 * 160.0)
    assert result.busy_time_s[7] == pytest.approx(100.0) and result.busy_time_s[4] == pytest.approx(60.0)


def test_per_kind_power_on_the_h200_by_hand() -> None:
    # One inference job on the 4g slice and one training job on the 3g slice of configuration 2, both 100 s:
    # u = 7 with 4 inference and 3 training slices -> P = idle + (4·(Pi(7) - idle) + 3·(Pt(7) - idle)) / 7,
    # capped at 700 W.
    h200 = load_gpu("h200-141gb")
    inf = Job("i", 0.0, 500.0, JobKind.INFERENCE, Scaling.MEASURED, (9e9, 9e9, 9e9, 100.0, 9e9), 9e9)
    train = Job("t", 0.0, 600.0, JobKind.TRAINING, Scaling.MEASURED, (9e9, 9e9, 100.0, 9e9, 9e9), 9e9)
    result = simulate([inf, train], 2, "edf-fs", gpu=h200)
    idle = h200.power.idle_w
    pi, pt = (
        h200.power.curve("transformer-inference").busy_w[7],
        h200.power.curve("transformer-training").busy_w[7],
    )
    watts = min(idle + (4 * (pi - idle) + 3 * (pt - idle)) / 7, 700.0)
    assert result.energy_j == pytest.approx(watts * 100.0)
    single = simulate([inf, train], 2, "edf-fs", gpu=h200, power_curve="compute-fma")
    assert single.energy_j == pytest.approx(h200.power.curve("compute-fma").busy_w[7] * 100.0)
