"""gpu calibrate's experiment loop on the fake: the replay must give back the recorded H200 levels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.errors import InputError
from wattsched.hardware.gpu import GpuError
from wattsched.hardware.gpu.calibrate import (
    CalibrationSettings,
    ReplayLoad,
    calibrate,
    curves_from_csv,
    curves_to_csv,
)
from wattsched.hardware.gpu.fake import FakeBackend

QUICK = CalibrationSettings.quick()


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def run(path: Path, settings: CalibrationSettings = QUICK) -> list:  # type: ignore[type-arg]
    fake = FakeBackend(path)
    clock = fake.use_virtual_clock()
    load = ReplayLoad(fake, 0, units=7, sms=132)
    return calibrate(
        fake, 0, load, units=7, sms=132, settings=settings, clock=clock.now, sleep=clock.sleep, progress=False
    )


def test_replay_gives_back_the_recorded_levels(h200: Path) -> None:
    levels = {level["level"]: level["power_w"] for level in json.loads(h200.read_text())["levels"]}
    results = run(h200)
    assert [(r.curve, r.busy_units) for r in results] == [
        (c, u) for c in ("compute", "memory") for u in range(8)
    ]
    # 19, 38, 57, 75, 94, 113, 132 busy SMs: one block per SM, k/7 of 132, as in the H200 run.
    assert [r.busy_sms for r in results[:8]] == [0, 19, 38, 57, 75, 94, 113, 132]
    for result in results:
        key = (
            "idle_start"
            if result.busy_units == 0
            else (f"{'fma' if result.curve == 'compute' else 'copy'}_{result.busy_units}of7")
        )
        assert result.power_w == pytest.approx(levels[key], rel=1e-9)
        assert result.energy_source == "counter" and result.seconds == pytest.approx(1.5)
        assert result.energy_j == pytest.approx(levels[key] * 1.5)


def test_sampled_power_gives_the_same_curve(h200: Path, tmp_path: Path) -> None:
    facts = json.loads(h200.read_text())
    facts["energy_counter_mj_start"] = None
    path = tmp_path / "no_counter.json"
    path.write_text(json.dumps(facts))
    counter = run(h200)
    sampled = run(path)
    assert all(s.energy_source == "sampled" for s in sampled)
    assert [s.power_w for s in sampled] == pytest.approx([c.power_w for c in counter], rel=1e-9)


def test_without_recorded_levels_the_replay_is_linear(h200: Path, tmp_path: Path) -> None:
    facts = json.loads(h200.read_text())
    del facts["levels"]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(facts))
    results = run(path, CalibrationSettings(settle_s=0.1, measure_s=0.5, kinds=("compute",)))
    assert [r.power_w for r in results] == pytest.approx([84.426 + (700 - 84.426) * u / 7 for u in range(8)])


def test_mig_mode_is_refused(h200: Path, tmp_path: Path) -> None:
    facts = json.loads(h200.read_text())
    facts["mig_mode_current_pending"] = [1, 1]
    path = tmp_path / "mig.json"
    path.write_text(json.dumps(facts))
    with pytest.raises(GpuError, match="MIG mode"):
        run(path)


def test_csv_round_trip(h200: Path, tmp_path: Path) -> None:
    results = run(h200)
    path = tmp_path / "curve.csv"
    path.write_text(curves_to_csv(results))
    curves = {c.name: c.power_w for c in curves_from_csv(path, units=7)}
    assert curves["compute"] == pytest.approx([r.power_w for r in results[:8]], rel=1e-12)
    assert curves["memory"] == pytest.approx([r.power_w for r in results[8:]], rel=1e-12)
    header = path.read_text().splitlines()[0].split(",")
    assert header[:4] == ["curve", "busy_units", "busy_sms", "power_w"]


@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("curve,power_w\ncompute,1\n", "missing column(s) busy_units"),
        ("curve,busy_units,power_w\n", "no rows"),
        ("curve,busy_units,power_w\ncompute,x,1\n", "row 1"),
        ("curve,busy_units,power_w\ncompute,0,-5\n", "power_w -5.0"),
        ("curve,busy_units,power_w\nbad name,0,5\n", "column 'curve'"),
        ("curve,busy_units,power_w\ncompute,0,5\ncompute,0,6\n", "busy_units 0 twice"),
        ("curve,busy_units,power_w\ncompute,0,5\ncompute,2,6\n", "needs busy_units 0..2"),
    ],
)
def test_bad_curve_files(tmp_path: Path, text: str, piece: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=piece.replace("(", r"\(").replace(")", r"\)")):
        curves_from_csv(path)


def test_curve_for_another_gpu_size(tmp_path: Path) -> None:
    path = tmp_path / "three.csv"
    path.write_text("curve,busy_units,power_w\ncompute,0,50\ncompute,1,60\ncompute,2,70\ncompute,3,80\n")
    with pytest.raises(InputError, match=r"needs busy_units 0..7 once each, has \[0, 1, 2, 3\]"):
        curves_from_csv(path, units=7)
