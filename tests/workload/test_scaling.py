"""Scaling curves (papers.md §A.3.4) and the per-size durations they give (§A.3.5)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.errors import ConfigError
from wattsched.workload.job import Scaling
from wattsched.workload.scaling import (
    SUBLINEAR_CURVES,
    ScalingCurve,
    capped_curve,
    curve_from_function,
    durations_from_base,
    linear_curve,
)

# papers.md §A.3.4 table, S(g) at g = 1, 2, 3, 4, 7 rounded to 3 decimals.
PAPER_TABLE = {
    "sub-e1": (1.0, 1.682, 2.280, 2.828, 4.304),  # g**0.75
    "sub-e2": (1.0, 1.717, 2.230, 2.598, 3.186),  # (1 - e^(-g/3)) / (1 - e^(-1/3))
    "sub-l1": (1.0, 1.693, 2.099, 2.386, 2.946),  # 1 + ln g
    "sub-l2": (1.0, 1.585, 2.000, 2.322, 3.000),  # log2(1 + g)
}


def test_sublinear_curves_match_the_paper_table() -> None:
    assert [c.name for c in SUBLINEAR_CURVES] == list(PAPER_TABLE)
    for curve in SUBLINEAR_CURVES:
        assert curve.kind == Scaling.SUBLINEAR
        assert curve.speedups == pytest.approx(PAPER_TABLE[curve.name], abs=5e-4)


def test_sublinear_exact_values_by_hand() -> None:
    e1, e2, l1, l2 = SUBLINEAR_CURVES
    assert e1.speedup(4) == pytest.approx(2 * math.sqrt(2))  # 4**0.75 = 2**1.5
    assert l2.speedup(3) == 2.0  # log2(4)
    assert l2.speedup(7) == 3.0  # log2(8)
    assert l1.speedup(2) == pytest.approx(1 + 0.6931471805599453)
    assert e2.speedup(1) == 1.0


def test_linear_and_capped_values() -> None:
    assert linear_curve().speedups == (1.0, 2.0, 3.0, 4.0, 7.0)
    assert linear_curve().kind == Scaling.LINEAR
    assert capped_curve(2).speedups == (1.0, 2.0, 2.0, 2.0, 2.0)
    assert capped_curve(3).speedups == (1.0, 2.0, 3.0, 3.0, 3.0)
    assert capped_curve(4).speedups == (1.0, 2.0, 3.0, 4.0, 4.0)
    assert capped_curve(3).name == "capped-3"
    assert capped_curve(3).kind == Scaling.CAPPED


@pytest.mark.parametrize(
    ("kind", "speedups", "piece"),
    [
        (Scaling.SUBLINEAR, (1.0, 2.0, 3.0), "expected 5"),
        (Scaling.SUBLINEAR, (1.1, 2.0, 3.0, 4.0, 5.0), "S(1) must be 1"),
        (Scaling.SUBLINEAR, (1.0, 2.0, 1.5, 4.0, 5.0), "non-decreasing"),
        (Scaling.CAPPED, (1.0, 2.5, 3.0, 4.0, 5.0), "S(2) = 2.5 > 2"),
        (Scaling.LINEAR, (1.0, 2.0, 3.0, 4.0, math.nan), "finite and > 0"),
        (Scaling.MEASURED, (1.0, 0.0, 1.0, 1.0, 1.0), "finite and > 0"),
        (Scaling.MEASURED, (2.0, 2.0, 2.0, 2.0, 2.0), "S(1) must be 1"),
    ],
)
def test_invalid_curves_are_refused(kind: Scaling, speedups: tuple[float, ...], piece: str) -> None:
    with pytest.raises(ConfigError, match=piece.replace("(", r"\(").replace(")", r"\)")):
        ScalingCurve(kind, "bad", speedups)  # type: ignore[arg-type]


def test_measured_curves_may_slow_down_or_be_superlinear() -> None:
    # Profiled workloads: only S(1) = 1 and positivity are required.
    curve = ScalingCurve(Scaling.MEASURED, "bert", (1.0, 2.2, 1.9, 4.5, 3.0))
    assert curve.speedup(3) == 1.9
    assert ScalingCurve("measured", "x", [1, 2, 3, 4, 5]).kind == Scaling.MEASURED  # type: ignore[arg-type]


def test_capped_curve_refuses_caps_below_one() -> None:
    with pytest.raises(ConfigError):
        capped_curve(0.5)


def test_durations_from_base_by_hand() -> None:
    # Linear, 120 s on 1g: 120, 60, 40, 30, 120/7; MIG disabled is 6 % faster than 7g.
    dur = durations_from_base(120.0, linear_curve())
    assert dur[:4] == (120.0, 60.0, 40.0, 30.0)
    assert dur[4] == 120.0 / 7.0
    assert dur[5] == (120.0 / 7.0) / 1.06
    # Capped at 2: every size from 2g on takes 60 s, and no-MIG equals 7g.
    assert durations_from_base(120.0, capped_curve(2)) == (120.0, 60.0, 60.0, 60.0, 60.0, 60.0)
    # log2(1+g): 3 s on 1g -> 3/1.585, 1.5 s on 3g, 1 s on 7g and without MIG.
    sub = durations_from_base(3.0, SUBLINEAR_CURVES[3])
    assert sub[2] == 1.5 and sub[4] == 1.0 and sub[5] == 1.0
    # The 1.06 is a parameter.
    assert durations_from_base(70.0, linear_curve(), full_gpu_speedup=1.25)[5] == 10.0 / 1.25


def test_durations_from_base_refuses_bad_inputs() -> None:
    with pytest.raises(ConfigError):
        durations_from_base(0.0, linear_curve())
    with pytest.raises(ConfigError):
        durations_from_base(10.0, linear_curve(), full_gpu_speedup=0.0)


PAPER_CURVES = [linear_curve(), capped_curve(2), capped_curve(3), capped_curve(4), *SUBLINEAR_CURVES]


@given(dur_1g=st.floats(min_value=1e-3, max_value=1e6), which=st.integers(0, len(PAPER_CURVES) - 1))
def test_durations_shrink_with_slice_size_but_not_below_linear(dur_1g: float, which: int) -> None:
    curve = PAPER_CURVES[which]
    dur = durations_from_base(dur_1g, curve)
    sizes = (1, 2, 3, 4, 7)
    assert dur[0] == dur_1g
    assert all(a >= b for a, b in itertools.pairwise(dur[:5]))
    for g, d in zip(sizes, dur[:5], strict=True):
        assert d >= dur_1g / g * (1 - 1e-12)  # never faster than linear
        assert d * curve.speedup(g) == pytest.approx(dur_1g, rel=1e-12)
    assert dur[5] <= dur[4]


def test_curve_from_function() -> None:
    curve = curve_from_function(Scaling.SUBLINEAR, "sqrt", math.sqrt)
    assert curve.speedups == (1.0, math.sqrt(2), math.sqrt(3), 2.0, math.sqrt(7))
