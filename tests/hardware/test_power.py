"""The power model: curves, declared mixes, per-kind states, the cap and its throttling factor (by hand)."""

from __future__ import annotations

import pytest

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.power import PowerCurve, PowerModel

A100 = load_gpu("a100-40gb")
H200 = load_gpu("h200-141gb")


def test_p1s_gpu_has_one_curve_and_the_table_is_that_curve() -> None:
    table = A100.power.table()
    assert table.power_w == (40.0, 119.0, 160.0, 205.3, 243.9, 247.7, 248.5, 248.5)
    assert (
        table.speed is None
        and not table.per_kind
        and dict(table.kind_weight) == {"inference": 1, "training": 1}
    )
    assert A100.power.table(throttle=True).speed is None  # P1's curve never exceeds its 250 W cap


def test_a_declared_mix_blends_curves() -> None:
    model = PowerModel(10.0, (PowerCurve("a", (10.0, 20.0, 40.0)), PowerCurve("b", (10.0, 60.0, 80.0))), "a")
    assert model.table({"a": 1.0, "b": 3.0}).power_w == (10.0, 50.0, 70.0)  # (20 + 3·60)/4, (40 + 3·80)/4
    with pytest.raises(ConfigError, match="positive sum"):
        model.table({"a": 0.0})
    with pytest.raises(ConfigError, match="unknown power curve 'c'"):
        model.table("c")


def test_per_kind_states_share_the_operating_point() -> None:
    table = H200.power.table()
    assert table.per_kind and table.kind_weight["training"] == 8
    inference, training = H200.power.curve("transformer-inference"), H200.power.curve("transformer-training")
    idle = H200.power.idle_w
    # one inference and one training slice busy: both at the card's u = 2 operating point, half each
    state = 1 + 8 * 1
    expected = idle + ((inference.busy_w[2] - idle) + (training.busy_w[2] - idle)) / 2
    assert table.power_w[state] == pytest.approx(expected) == pytest.approx(84.4 + (308.4 + 190.8) / 2)
    assert table.power_w[3] == inference.busy_w[3] and table.power_w[8 * 5] == training.busy_w[5]
    assert table.busy_units(2 + 8 * 3) == 5
    # Declaring one curve gives the single-state table of that curve.
    assert H200.power.table("compute-fma").power_w == H200.power.curve("compute-fma").busy_w


def test_the_cap_is_respected_and_throttling_slows_every_slice() -> None:
    curve = H200.power.curve("transformer-inference")
    assert curve.busy_w[7] > 700.0  # the uncapped fit extrapolates past the 700 W limit
    clamped = H200.power.table("transformer-inference")
    assert max(clamped.power_w) == 700.0 and clamped.speed is None
    throttled = H200.power.table("transformer-inference", throttle=True)
    idle, alpha = H200.power.idle_w, H200.power.cap_speed_exponent
    assert throttled.power_w[7] == 700.0
    assert throttled.speed is not None
    assert throttled.speed[7] == pytest.approx(((700.0 - idle) / (curve.busy_w[7] - idle)) ** (1 / alpha))
    assert throttled.speed[:7] == (1.0,) * 7
