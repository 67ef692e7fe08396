"""Recordings replay as they were read, and a recording becomes a catalogue entry of schema 1."""

from __future__ import annotations

import csv
import datetime as dt
import json
import tomllib
from pathlib import Path

import pytest

from wattsched.hardware.gpu import GpuError
from wattsched.hardware.gpu.calibrate import curves_from_csv
from wattsched.hardware.gpu.fake import FakeBackend
from wattsched.hardware.gpu.snapshot import catalogue_id, catalogue_toml, record_facts, record_machine

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def frozen() -> float:
    return 0.0


def test_record_keeps_the_snapshot_keys_and_values(h200: Path) -> None:
    original = json.loads(h200.read_text())
    recorded = record_facts(FakeBackend(h200, clock=frozen), 0, now=NOW)
    same = [
        "driver", "name", "architecture", "compute_capability", "memory_total_bytes",
        "mig_mode_current_pending", "power_limit_constraints_mw", "power_limit_default_mw",
        "power_limit_enforced_mw", "power_usage_idle_mw",
        "energy_counter_mj_start", "clock_sm_max_mhz", "clock_mem_max_mhz", "clock_sm_default_app_mhz",
        "clock_mem_default_app_mhz", "supported_mem_clocks_mhz", "supported_graphics_clocks_mhz",
        "multiprocessor_count",
    ]  # fmt: skip
    for key in same:
        assert recorded[key] == original[key], key
    supported = {k: v for k, v in original["gpu_instance_profiles"].items() if "error" not in v}
    assert set(recorded["gpu_instance_profiles"]) == set(supported)
    for key, profile in recorded["gpu_instance_profiles"].items():
        for field in ("id", "sliceCount", "instanceCount", "multiprocessorCount", "memorySizeMB", "name"):
            assert profile[field] == supported[key][field]
        assert profile["placements"] == supported[key]["placements"]
    assert recorded["recorded_at"] == "2026-11-30T12:00:00+00:00" and recorded["mig_instances"] == []


def test_a_recording_replays_to_the_same_recording(h200: Path, tmp_path: Path) -> None:
    first = record_machine(FakeBackend(h200, clock=frozen))
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps(first))
    second = record_machine(FakeBackend(path, clock=frozen))
    for facts in (first, second):
        facts.pop("recorded_by"), facts.pop("recorded_at")
    assert first == second


@pytest.mark.parametrize(
    ("name", "memory_bytes", "expected"),
    [
        ("NVIDIA H200", 150_754_820_096, "h200-141gb"),  # 140.4 GiB
        ("NVIDIA A100-SXM4-40GB", 40 * 2**30, "a100-40gb"),
        ("NVIDIA A100-SXM4-80GB", 80 * 2**30, "a100-80gb"),
        ("NVIDIA H100 80GB HBM3", 81_559 * 2**20, "h100-80gb"),  # 79.6 GiB
    ],
)
def test_catalogue_ids(name: str, memory_bytes: int, expected: str) -> None:
    assert catalogue_id(name, memory_bytes) == expected


def test_h200_entry_without_calibration_is_linear_and_says_so(h200: Path) -> None:
    facts = json.loads(h200.read_text())
    text = catalogue_toml(facts, where=str(h200), today=dt.date(2026, 11, 30))
    entry = tomllib.loads(text)
    gpu = entry["gpu"]
    assert entry["schema"] == 1
    assert (gpu["name"], gpu["catalogue"], gpu["compute_slices"], gpu["memory_slots"]) == (
        "NVIDIA H200",
        "h200-141gb",
        7,
        8,
    )
    assert (gpu["memory_mb"], gpu["sms"], gpu["repartition_s"]) == (143_771, 132, 4.0)
    assert "2026-11-30" in gpu["sources"][0]
    profiles = {p["name"]: p for p in entry["profile"]}
    assert (
        len(profiles) == 7 and profiles["1g.18gb+me"]["media"] is True and "media" not in profiles["1g.18gb"]
    )
    assert profiles["3g.71gb"] == {
        "name": "3g.71gb",
        "nvml_id": 9,
        "compute": 3,
        "memory_slots": 4,
        "sms": 60,
        "memory_mb": 71_424,
        "placements": [[0, 4], [4, 4]],
    }
    power = entry["power"]
    assert power["estimated"] is True and power["idle_w"] == 84.426 and power["cap_w"] == 700.0
    busy = power["curves"]["linear"]["busy_w"]
    # idle + (cap - idle) * u / 7, u = 1..7: 700 W with all seven slices busy.
    assert busy == pytest.approx([84.426 + (700 - 84.426) * u / 7 for u in range(1, 8)], abs=1e-3)
    clocks = entry["clocks"]
    assert clocks["sm_mhz"][0] == 1980 and clocks["sm_mhz"][-1] == 345 and len(clocks["sm_mhz"]) == 110
    assert clocks["mem_mhz"] == [3201, 2201] and clocks["default_sm_mhz"] == 1980
    assert (clocks["power_limit_min_w"], clocks["power_limit_max_w"]) == (200.0, 700.0)


def h200_curve_csv(repo_data: Path, folder: Path) -> Path:
    """The H200 measurement (power_levels.csv) in gpu calibrate's columns: busy_sevenths -> busy_units."""
    rows = list(csv.DictReader((repo_data / "hardware" / "h200" / "power_levels.csv").open()))
    idle = next(r for r in rows if r["level"] == "idle_start")
    path = folder / "curve.csv"
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["curve", "busy_units", "power_w"])
        for curve, kind in (("compute", "compute_fma"), ("memory", "memory_copy")):
            writer.writerow([curve, 0, idle["power_w"]])
            for row in rows:
                if row["kind"] == kind:
                    writer.writerow([curve, row["busy_sevenths"], row["power_w"]])
    return path


def test_h200_entry_with_the_measured_curves(h200: Path, repo_data: Path, tmp_path: Path) -> None:
    curves = curves_from_csv(h200_curve_csv(repo_data, tmp_path), units=7)
    entry = tomllib.loads(catalogue_toml(json.loads(h200.read_text()), where="h200", curves=curves))
    power = entry["power"]
    assert power["estimated"] is False and power["idle_w"] == 124.13 and power["default_curve"] == "compute"
    assert power["curves"]["compute"]["busy_w"] == [160.77, 194.58, 222.97, 257.03, 298.66, 339.34, 366.39]
    # The copy kernel dips at 6/7 (399.64 W after 411.22 W); power cannot fall with more busy slices, so the
    # last three are pooled as the catalogue's own H200 entry does: (411.22 + 399.64 + 404.32) / 3 = 405.06.
    assert power["curves"]["memory"]["busy_w"] == [256.25, 311.42, 357.78, 378.94, 405.06, 405.06, 405.06]


def test_throttled_levels_are_left_out(h200: Path, tmp_path: Path) -> None:
    path = tmp_path / "capped.csv"
    rows = ["curve,busy_units,power_w,sm_clock_mhz", "gemm,0,100,1980"]
    rows += [f"gemm,{u},{100 + 100 * u},1980" for u in range(1, 6)] + ["gemm,6,700,1500", "gemm,7,700,1410"]
    path.write_text("\n".join(rows) + "\n")
    (curve,) = curves_from_csv(path, units=7)
    assert curve.throttled == (False,) * 6 + (True, True)
    entry = tomllib.loads(catalogue_toml(json.loads(h200.read_text()), where="h200", curves=[curve]))
    # u = 6, 7 ran at the 700 W cap with a lowered clock: the uncapped curve extrapolates the slope instead.
    assert entry["power"]["curves"]["gemm"]["busy_w"] == [200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0]


def test_curve_of_the_wrong_length_and_a_gpu_without_mig(h200: Path, repo_data: Path, tmp_path: Path) -> None:
    facts = json.loads(h200.read_text())
    curves = curves_from_csv(h200_curve_csv(repo_data, tmp_path))
    with pytest.raises(GpuError, match="has 7 busy levels; this GPU has 3"):
        catalogue_toml(
            {**facts, "gpu_instance_profiles": {"0": {**facts["gpu_instance_profiles"]["2"]}}},
            where="x",
            curves=curves,
        )
    with pytest.raises(GpuError, match="no MIG profiles"):
        catalogue_toml({**facts, "gpu_instance_profiles": {}}, where="x")
