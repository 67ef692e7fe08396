"""The §A.6.1 observation: sizes, bins and the first-m-jobs rule, checked on hand-made values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.rl.observation import (
    DEFAULT_BIN_EDGES_MIN,
    JobFeatures,
    ObservationSpec,
    bin_index,
    encode_observation,
    job_features,
)


def test_default_size_is_102() -> None:
    # 12 configurations + 24 hours + 3 jobs x (11 deadline bins + 11 duration bins) = 12 + 24 + 66
    assert ObservationSpec().size == 102


@pytest.mark.parametrize(
    ("minutes", "expected"),
    [
        (-250.0, 0),
        (-100.0, 0),
        (-0.01, 0),
        (0.0, 1),
        (0.05, 2),
        (0.19, 2),
        (0.2, 3),
        (0.5, 4),
        (1.0, 5),
        (4.99, 5),
        (5.0, 6),
        (10.0, 7),
        (20.0, 8),
        (30.0, 9),
        (1e9, 9),
    ],
)
def test_bins_are_left_closed(minutes: float, expected: int) -> None:
    assert bin_index(minutes, DEFAULT_BIN_EDGES_MIN) == expected


def test_hand_encoded_vector() -> None:
    now = 5400.0  # 01:30 -> hour bin 1
    jobs = [
        # arrival, deadline, remaining fraction, durations (1g, 2g, 3g, 4g, 7g, full)
        (10.0, now + 120.0, 0.5, (60.0, 30.0, 20.0, 15.0, 60.0 / 7, 8.0)),  # 2 min -> bin 5
        (20.0, now - 1800.0, 1.0, (600.0, 300.0, 200.0, 150.0, 600.0 / 7, 80.0)),  # -30 min -> bin 0
        (30.0, now - 12_000.0, 1.0, (6.0, 6.0, 6.0, 6.0, 6.0, 6.0)),  # -200 min -> bin 0
        (40.0, now + 1e6, 1.0, (6.0,) * 6),  # 4th by deadline: not observed
    ]
    features = job_features(now, jobs, 3)
    # sorted by deadline: job 3 (-200 min), job 2 (-30 min), job 1 (+2 min)
    assert [round(f.relative_deadline_s) for f in features] == [-12_000, -1800, 120]
    # job 1: 0.5 * (60 + 30 + 20 + 15 + 8.571) / 5 = 13.357 s = 0.2226 min -> bin 3
    assert features[2].mean_remaining_s == pytest.approx(0.5 * (125.0 + 60.0 / 7) / 5)
    vector = encode_observation(3, now, features)
    expected = np.zeros(102, dtype=np.float32)
    expected[2] = 1  # configuration 3
    expected[12 + 1] = 1  # hour 1
    base = 36
    # first observed: the -200 min job: deadline bin 0; mean 6 s = 0.1 min in [0.05, 0.2) -> bin 2
    expected[base + 0] = 1
    expected[base + 11 + 2] = 1
    # second: the -30 min job: bin 0; mean (600 + 300 + 200 + 150 + 85.714) / 5 = 267.1 s = 4.45 min -> bin 5
    expected[base + 22 + 0] = 1
    expected[base + 33 + 5] = 1
    # third: the +2 min job: bin 5; mean 0.2226 min -> bin 3
    expected[base + 44 + 5] = 1
    expected[base + 55 + 3] = 1
    np.testing.assert_array_equal(vector, expected)


def test_missing_jobs_use_the_no_job_bin() -> None:
    vector = encode_observation(12, 86_399.0, [])
    assert vector[11] == 1 and vector[12 + 23] == 1
    for slot in range(6):
        assert vector[36 + 11 * slot + 10] == 1


def test_rejects_unknown_configuration() -> None:
    with pytest.raises(ValueError, match=r"one of \[1, 2, .*12\], got 13"):
        encode_observation(13, 0.0, [])


@given(
    config=st.integers(1, 12),
    time_s=st.floats(0, 200_000),
    values=st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(0, 1e6)), max_size=3),
)
def test_exactly_one_hot_per_block(config: int, time_s: float, values: list[tuple[float, float]]) -> None:
    vector = encode_observation(config, time_s, [JobFeatures(d, m) for d, m in values])
    blocks = [(0, 12), (12, 36)] + [(36 + 11 * k, 47 + 11 * k) for k in range(6)]
    for low, high in blocks:
        assert vector[low:high].sum() == 1.0
    assert vector.dtype == np.float32 and vector.shape == (102,)
