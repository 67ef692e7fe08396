"""The job model's durations for sizes a trace does not give (CONTRACT §7), by hand."""

from __future__ import annotations

import math

import pytest

from wattsched.errors import InputError
from wattsched.workload.job import P1_SIZES, Job, JobKind, Scaling


def _job(scaling: Scaling, sizes: tuple[int, ...], durations: tuple[float, ...]) -> Job:
    return Job("x", 0.0, 1.0, JobKind.TRAINING, scaling, durations, durations[-1], sizes)


def test_given_sizes_and_the_simulator_row() -> None:
    job = _job(Scaling.LINEAR, P1_SIZES, (70.0, 35.0, 70 / 3, 17.5, 10.0))
    assert job.duration_for_size(3) == 70 / 3
    assert job.durations_for(P1_SIZES) == (70.0, 35.0, 70 / 3, 17.5, 10.0, 10.0)
    assert job.durations_for((1, 7)) == (70.0, 10.0, 10.0)


def test_above_the_largest_size_each_family_follows_its_rule() -> None:
    linear = _job(Scaling.LINEAR, (1, 2), (60.0, 30.0))
    assert linear.duration_for_size(4) == pytest.approx(15.0)  # speed ∝ g
    capped = _job(Scaling.CAPPED, (1, 2), (60.0, 30.0))
    assert capped.duration_for_size(7) == 30.0  # no faster than on the largest given size
    sub = _job(Scaling.SUBLINEAR, (1, 4), (60.0, 30.0))  # S(4) = 2: exponent log(2)/log(4) = 0.5
    assert sub.duration_for_size(16) == pytest.approx(15.0)  # S(16) = 4
    measured = _job(Scaling.MEASURED, (1, 2), (60.0, 30.0))
    with pytest.raises(InputError, match="dur_7g_s"):
        measured.duration_for_size(7)


def test_below_and_between_given_sizes() -> None:
    job = _job(Scaling.MEASURED, (2, 4), (50.0, 20.0))
    assert job.duration_for_size(1) == 100.0  # speed ∝ g below the smallest size
    assert job.duration_for_size(3) == pytest.approx(1 / ((1 / 50 + 1 / 20) / 2))  # speed halfway
    assert math.isfinite(job.duration_for_size(3))
