"""Fitting power curves to measurements: the monotone fit by hand, and the H200 entry refitted from data."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.fit_power import (
    fit_cap_exponent,
    fit_curve,
    monotone,
    read_concurrent_cap_exponent,
    read_partitions,
    read_power_levels,
)

CURVE_NAMES = {
    "compute_fma": "compute-fma",
    "memory_copy": "memory-copy",
    "gemm_bf16_8192": "gemm-bf16",
    "stream_add_1gib": "stream-add",
    "transformer_infer_bf16": "transformer-inference",
    "transformer_train_fp32": "transformer-training",
    "resnet50_infer_bf16_b64": "resnet50-inference",
}


def test_monotone_pools_adjacent_violators() -> None:
    assert monotone([1.0, 3.0, 2.0, 4.0]) == [1.0, 2.5, 2.5, 4.0]
    assert monotone([411.0, 399.0, 405.0]) == [405.0, 405.0, 405.0]
    assert monotone([1.0, 2.0]) == [1.0, 2.0]


def test_fit_curve_interpolates_drops_throttled_points_and_extrapolates() -> None:
    # Points at x = 2/7, 4/7 and (throttled, dropped) 7/7; U = 7.
    points = [(2 / 7, 200.0, False), (4 / 7, 300.0, False), (1.0, 350.0, True)]
    busy = fit_curve(points, 7)
    assert busy[1] == pytest.approx(200.0) and busy[3] == pytest.approx(300.0)
    assert busy[2] == pytest.approx(250.0)  # halfway
    assert busy[0] == pytest.approx(150.0)  # below the first point: the first segment's line
    assert busy[6] == pytest.approx(450.0)  # past the last kept point: its slope, 50 W per slice
    with pytest.raises(ValueError, match="two measurements"):
        fit_curve([(0.5, 1.0, False), (1.0, 2.0, True)], 7)


def test_fit_cap_exponent_recovers_a_known_exponent() -> None:
    idle, cap, alpha = 100.0, 500.0, 2.0
    runs = [(p, ((cap - idle) / (p - idle)) ** (1 / alpha)) for p in (600.0, 800.0, 1000.0)]
    assert fit_cap_exponent(runs, idle, cap) == pytest.approx(alpha)


def test_the_h200_entry_is_its_refit(repo_data: Path) -> None:
    folder = repo_data / "hardware" / "h200"
    gpu = load_gpu("h200-141gb")
    fitted = {
        **read_power_levels(str(folder / "power_levels.csv")),
        **read_partitions(str(folder / "partitions.csv"), gpu.sms),
    }
    assert set(fitted) == set(CURVE_NAMES)
    for raw, name in CURVE_NAMES.items():
        assert gpu.power.curve(name).busy_w[1:] == pytest.approx(fitted[raw], abs=0.051)  # TOML keeps 0.1 W
    alpha = read_concurrent_cap_exponent(
        str(folder / "concurrent.json"), gpu.power.idle_w, 700.0, "gemm_bf16_4096"
    )
    assert gpu.power.cap_speed_exponent == pytest.approx(alpha, abs=0.005)
    assert 1.5 < alpha < 2.5 and math.isfinite(alpha)
    # Compute-bound power does not saturate like P1's A100 curve: the 7th slice still adds > 25 W.
    fma = gpu.power.curve("compute-fma").busy_w
    assert fma[7] - fma[6] > 25.0
