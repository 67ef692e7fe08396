"""DVFS hardware data: coupling, intervals, HKBU grid and cluster constants loaded from TOML."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.hardware.dvfs import (
    ClusterConstants,
    ScalingInterval,
    VoltageCoupling,
    available_dvfs_gpus,
    default_dvfs_gpu,
    load_dvfs_gpu,
)


def test_packaged_gpus() -> None:
    assert available_dvfs_gpus() == ["gtx1080ti", "rtx2070s"]
    gpu = default_dvfs_gpu()
    assert (gpu.core_clock_mhz, gpu.memory_clock_mhz, gpu.core_voltage_v) == (1800.0, 5000.0, 1.05)
    wide, narrow = gpu.interval("wide"), gpu.interval("narrow")
    assert (wide.v_min, wide.v_max, wide.f_core_min, wide.f_mem_min, wide.f_mem_max) == (
        0.5,
        1.2,
        0.5,
        0.5,
        1.2,
    )
    assert (narrow.v_min, narrow.v_max, narrow.f_core_min, narrow.f_mem_min, narrow.f_mem_max) == (
        0.8,
        1.24,
        0.89,
        0.8,
        1.1,
    )
    # f_core,max = g1(1.2) = sqrt(0.35) + 0.5 ~ 1.0916 (papers.md §B.2)
    assert wide.f_core_max_at_top == pytest.approx(1.0916, abs=1e-4)
    # narrow: f_core >= 0.89 needs V >= 2 (0.39)^2 + 0.5 = 0.8042 > 0.8
    assert narrow.v_low == pytest.approx(0.8042)
    assert gpu.hkbu.voltages().size == 16 and gpu.hkbu.voltages()[-1] == pytest.approx(1.25)
    assert load_dvfs_gpu("rtx2070s").hkbu.voltages().size == 13
    with pytest.raises(ConfigError, match="narrow, wide"):
        gpu.interval("medium")


def test_coupling_is_inverted_exactly() -> None:
    coupling = VoltageCoupling()
    v = np.linspace(0.5, 1.25, 31)
    np.testing.assert_allclose(coupling.v_min_for(coupling.f_core_max(v)), v)
    assert coupling.f_core_max(1.0) == pytest.approx(1.0)  # the default point lies on the curve


def test_cluster_constants_paper_values() -> None:
    cluster = default_dvfs_gpu().cluster
    assert cluster == ClusterConstants(37.0, 5400.0, 60.0, 2, 2048, 85.0, 200.0)
    # rho = floor(Δ / (P_idle slot)) = floor(5400 / 2220) = 2
    assert ClusterConstants.rho_for(cluster.turn_on_j_per_pair, cluster.idle_power_w, cluster.slot_s) == 2
    with pytest.raises(ConfigError):
        ClusterConstants(37.0, 5400.0, 0.0, 2, 2048, 85.0, 200.0)


def test_interval_validation() -> None:
    with pytest.raises(ConfigError, match="below g1"):
        ScalingInterval("x", 0.6, 1.2, 0.5, 0.5, 1.2, VoltageCoupling())  # g1(0.6) > 0.5
    with pytest.raises(ConfigError):
        ScalingInterval("x", 1.2, 0.6, 0.9, 0.5, 1.2, VoltageCoupling())


def test_load_from_path_and_errors(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[2] / "src/wattsched/hardware/data/dvfs/gtx1080ti.toml"
    copy = tmp_path / "mine_dvfs.toml"
    copy.write_text(source.read_text().replace("v_max = 1.2\n", "v_max = 1.1\n", 1))
    assert load_dvfs_gpu(copy).wide.v_max == 1.1
    broken = tmp_path / "broken.toml"
    broken.write_text(source.read_text().replace("v_max = 1.2\n", 'v_max = "high"\n', 1))
    with pytest.raises(InputError, match="v_max"):
        load_dvfs_gpu(broken)
    with pytest.raises(ConfigError, match="gtx1080ti"):
        load_dvfs_gpu("a100")
