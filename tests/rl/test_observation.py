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
    QueueFeatures,
    bin_index,
    encode_observation,
    expected_arrivals_next_hour,
    job_features,
    queue_features,
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


def test_queue_blocks_are_appended_by_hand() -> None:
    # P1 part as in test_missing_jobs_use_the_no_job_bin, then count (6 bins), training (3), waiting (4),
    # slice_busy (7): 102 + 6 + 3 + 4 + 7 = 122 inputs.
    spec = ObservationSpec(count_bins=6, training_bins=3, waiting_bins=4, slice_busy=True)
    assert spec.size == 122 and spec.p1_size == 102 and spec.uses_queue
    queue = QueueFeatures(unfinished=9, training=2, waiting=3, busy_slices=(0, 2))
    vector = encode_observation(12, 0.0, [], spec, queue)
    assert vector[:102].sum() == 2 + 6  # configuration, hour and six "no job" bins
    np.testing.assert_array_equal(vector[102:108], [0, 0, 0, 0, 0, 1])  # 9 jobs -> overflow bin 5
    np.testing.assert_array_equal(vector[108:111], [0, 0, 1])  # 2 training jobs -> bin 2 (last)
    np.testing.assert_array_equal(vector[111:115], [0, 0, 0, 1])  # 3 waiting -> bin 3 (last)
    np.testing.assert_array_equal(vector[115:122], [1, 0, 1, 0, 0, 0, 0])  # slices 0 and 2 busy


def test_queue_blocks_off_give_p1_state_and_need_the_queue_when_on() -> None:
    plain = encode_observation(3, 100.0, [], ObservationSpec())
    also_plain = encode_observation(3, 100.0, [], ObservationSpec(), QueueFeatures(4, 1, 2, (0,)))
    np.testing.assert_array_equal(plain, also_plain)
    with pytest.raises(ValueError, match="queue="):
        encode_observation(3, 100.0, [], ObservationSpec(count_bins=4))
    with pytest.raises(ValueError, match="count_bins"):
        ObservationSpec(count_bins=1)
    with pytest.raises(ValueError, match="busy slice position 7"):
        encode_observation(3, 0.0, [], ObservationSpec(slice_busy=True), QueueFeatures(1, 0, 0, (7,)))


def test_queue_features_count_a_snapshot() -> None:
    from wattsched.mig import JobView
    from wattsched.workload.job import JobKind

    durations = (6.0,) * 6
    jobs = [
        JobView("a", 0.0, 10.0, 1.0, durations, 2, JobKind.TRAINING),
        JobView("b", 0.0, 20.0, 0.5, durations, None, JobKind.INFERENCE),
        JobView("c", 0.0, 30.0, 1.0, durations, None, JobKind.TRAINING),
        JobView("d", 0.0, 40.0, 1.0, durations, 0, None),  # a trace without kinds
    ]
    assert queue_features(jobs) == QueueFeatures(unfinished=4, training=2, waiting=2, busy_slices=(0, 2))
    assert queue_features([]) == QueueFeatures(0, 0, 0, ())


def test_spec_for_gpu_sizes_the_slice_block() -> None:
    spec = ObservationSpec.for_gpu("a100-40gb", count_bins=12, slice_busy=True)
    assert spec.max_slices == 7  # configuration 12: seven 1g slices
    assert spec.size == 102 + 12 + 7


def test_expected_arrivals_next_hour_by_hand() -> None:
    counts = [10.0] * 24
    counts[5], counts[6], counts[23] = 20.0, 40.0, 4.0
    # 5:15: three quarters of hour 5 (20) and a quarter of hour 6 (40): 15 + 10 = 25
    assert expected_arrivals_next_hour(5 * 3600 + 900, counts) == pytest.approx(25.0)
    assert expected_arrivals_next_hour(6 * 3600, counts) == pytest.approx(40.0)  # on the hour: that hour's
    # 23:30 wraps to hour 0 of the next day: 0.5 * 4 + 0.5 * 10 = 7; a second day starts over
    assert expected_arrivals_next_hour(23 * 3600 + 1800, counts) == pytest.approx(7.0)
    assert expected_arrivals_next_hour(86_400 + 5 * 3600 + 900, counts) == pytest.approx(25.0)


def test_forecast_input_is_last_and_scaled_by_the_peak_hour() -> None:
    counts = tuple([10.0] * 5 + [20.0, 40.0] + [10.0] * 17)
    spec = ObservationSpec(count_bins=4, hourly_arrivals=counts)
    assert spec.size == 102 + 4 + 1
    vector = encode_observation(12, 5 * 3600 + 900, [], spec, QueueFeatures(2, 0, 0))
    assert vector[-1] == pytest.approx(25.0 / 40.0)
    np.testing.assert_array_equal(vector[102:106], [0, 0, 1, 0])  # the count block is unmoved
    # without queue blocks the forecast needs no queue; off, the vector is P1's
    alone = encode_observation(12, 6 * 3600, [], ObservationSpec(hourly_arrivals=counts))
    assert alone.shape == (103,) and alone[-1] == 1.0
    np.testing.assert_array_equal(alone[:102], encode_observation(12, 6 * 3600, [], ObservationSpec()))
    with pytest.raises(ValueError, match="hourly_arrivals"):
        ObservationSpec(hourly_arrivals=(1.0,) * 23)
    with pytest.raises(ValueError, match="hourly_arrivals"):
        ObservationSpec(hourly_arrivals=(0.0,) * 24)
