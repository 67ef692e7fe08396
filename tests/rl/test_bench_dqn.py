"""benchmarks/bench_dqn.py's statistics, its ablation rows and the days.csv round trip (no training)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from wattsched.rl.dqn import paper_config, quick_config

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_dqn.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_dqn_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_gain_is_one_minus_the_ratio_of_means_by_hand(bench: ModuleType) -> None:
    ours = np.array([1.0, 2.0, 3.0])
    other = np.array([2.0, 2.0, 4.0])
    g = bench.gain(ours, other)
    assert g["gain"] == pytest.approx(1.0 - 2.0 / (8.0 / 3.0))  # 0.25
    assert g["days_better"] == 2 and g["days"] == 3
    assert g["ci95_low"] <= g["gain"] <= g["ci95_high"]
    # Every bootstrap ratio lies between the smallest and largest per-day ratio (paired resampling).
    assert g["ci95_low"] >= 0.0 - 1e-12 and g["ci95_high"] <= 0.5 + 1e-12


def test_gain_interval_collapses_when_every_day_has_the_same_ratio(bench: ModuleType) -> None:
    other = np.array([3.0, 5.0, 4.0, 9.0])
    g = bench.gain(0.7 * other, other, seed=3)
    assert g["gain"] == pytest.approx(0.3)
    assert g["ci95_low"] == pytest.approx(0.3) and g["ci95_high"] == pytest.approx(0.3)


def test_days_csv_round_trip(bench: ModuleType, tmp_path: Path) -> None:
    rows = [
        {"method": "static", "day": 0, "energy_j": 1.5e7, "avg_tardiness_s": 60.25, "repartitions": 0},
        {"method": "dynamic", "day": 7, "energy_j": 1.25e7, "avg_tardiness_s": 0.0, "repartitions": 412},
    ]
    path = tmp_path / "days.csv"
    bench._write_csv(path, rows)
    back = bench._read_days(path)
    assert [r["method"] for r in back] == ["static", "dynamic"]
    assert [r["day"] for r in back] == [0, 7]
    assert back[0]["energy_j"] == 1.5e7 and back[1]["avg_tardiness_s"] == 0.0
    assert back[1]["repartitions"] == 412.0


def test_each_ablation_row_changes_only_what_it_names(bench: ModuleType) -> None:
    base = replace(paper_config(), total_timesteps=5_000)
    rows = {name: change(base) for name, _, change in bench.ABLATIONS}
    assert rows["paper_config"] == base
    assert rows["- mask"] == replace(base, env=replace(base.env, mask_idle_slices=False))
    assert rows["- shaping"] == replace(base, env=replace(base.env, shaping_gamma=None))
    assert rows["- n-step"] == replace(base, n_steps=1)
    assert rows["- learning rate"] == replace(base, learning_rate=1e-3)
    assert rows["+ double DQN"] == replace(base, double_q=True)
    assert rows["- ensemble"] == replace(base, ensemble=1, ensemble_keep=0) and base.ensemble == 8
    assert rows["- choice"] == replace(base, ensemble_keep=0) and base.ensemble_keep == 3
    assert rows["- 4 envs"] == replace(base, n_envs=1) and base.n_envs == 4
    p1 = rows["P1 (all off)"]
    switched_off = (p1.env.count_bins, p1.env.mask_idle_slices, p1.env.shaping_gamma, p1.n_steps)
    assert switched_off == (0, False, None, 1) and (p1.ensemble, p1.ensemble_keep, p1.n_envs) == (1, 0, 1)
    # The P1 row keeps the preset's load, ET coefficient and budget.
    assert p1.env.rate_multiplier == 2.5 and p1.total_timesteps == 5_000
    assert p1.env.et_coefficient == base.env.et_coefficient
    assert quick_config().env.rate_multiplier == 1.0


def test_summary_scores_the_rollout_in_its_own_pool(bench: ModuleType) -> None:
    # Tardiness proportional to energy: ET (linear in both) is then proportional to energy, so every gain is
    # 1 - energy ratio whatever a is (by hand: the rollout uses 0.7 of Day-Night's energy each day, 0.5 of
    # Static's, 0.2 of No-MIG's).
    energy = {
        "no-mig": 10.0,
        "static": 4.0,
        "day-night": 20.0 / 7.0,
        "dynamic": 2.5,
        "lookahead": 3.0,
        bench.ROLLOUT: 2.0,
    }
    rows = [
        {
            "method": m,
            "day": d,
            "energy_j": e * 1e7 * (1 + d),
            "avg_tardiness_s": e * (1 + d),
            "repartitions": 1,
        }
        for m, e in energy.items()
        for d in range(3)
    ]
    summary = bench._summarise(rows)
    assert summary["pool4r"]["pool"] == ["no-mig", "static", "day-night", bench.ROLLOUT]
    for pool in ("pool4", "pool3", "pool4r"):
        gains = summary[pool]["rollout_gain"]
        assert gains["day-night"]["gain"] == pytest.approx(0.3)
        assert gains["static"]["gain"] == pytest.approx(0.5)
        assert gains["no-mig"]["gain"] == pytest.approx(0.8)
        assert summary[pool]["dynamic_gain"]["static"]["gain"] == pytest.approx(1 - 2.5 / 4.0)
    without = bench._summarise([r for r in rows if r["method"] != bench.ROLLOUT])
    assert "pool4r" not in without and without["pool4"]["rollout_gain"] == {}
