"""ET metric (CONTRACT §2): x = energy in J, y = average tardiness in minutes, a = t̄ / (2 s̄)."""

from __future__ import annotations

import numpy as np
import pytest

from wattsched.errors import ConfigError
from wattsched.metrics import et_coefficient, et_score, et_values, summarize_runs


def test_et_by_hand() -> None:
    # Two runs: energies 1000 J and 3000 J (mean 2000); tardiness 60 s and 180 s = 1 and 3 min (mean 2).
    # a = 2 / (2 * 2000) = 0.0005. ET_1 = (0.5 + 1) / 1.0005, ET_2 = (1.5 + 3) / 1.0005; mean = 3 / 1.0005.
    energy, tardiness = [1000.0, 3000.0], [60.0, 180.0]
    a = et_coefficient(energy, tardiness)
    assert a == pytest.approx(0.0005)
    assert et_values(energy, tardiness, a) == pytest.approx(np.array([1.5, 4.5]) / 1.0005)
    assert et_score(energy, tardiness) == pytest.approx(3.0 / 1.0005)


def test_pooled_coefficient_can_come_from_another_pool() -> None:
    # With a = 0 ET is the mean tardiness in minutes.
    assert et_score([5.0, 7.0], [120.0, 240.0], a=0.0) == pytest.approx(3.0)


def test_at_mean_energy_energy_weighs_half_the_mean_tardiness() -> None:
    # The factor 2: a run at the mean energy contributes a·s̄ = t̄/2.
    energy, tardiness = [2.0e7, 2.0e7], [600.0, 600.0]
    a = et_coefficient(energy, tardiness)
    assert a * 2.0e7 == pytest.approx(10.0 / 2)


def test_errors() -> None:
    with pytest.raises(ConfigError):
        et_coefficient([], [])
    with pytest.raises(ConfigError):
        et_coefficient([1.0, 2.0], [1.0])
    with pytest.raises(ConfigError):
        et_coefficient([0.0], [1.0])


def test_summarize_runs() -> None:
    keys = (
        "energy_j",
        "avg_tardiness_s",
        "max_tardiness_s",
        "late_jobs",
        "preemptions",
        "repartitions",
        "jobs",
    )
    runs = [
        dict(zip(keys, (1.0, 2.0, 4.0, 1, 2, 0, 10), strict=True)),
        dict(zip(keys, (3.0, 4.0, 8.0, 3, 4, 2, 10), strict=True)),
    ]
    summary = summarize_runs(runs)
    assert summary["energy_j"] == 2.0 and summary["preemptions"] == 3.0 and summary["runs"] == 2.0
