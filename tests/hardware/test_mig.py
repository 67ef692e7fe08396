"""P1's A100-40GB in the catalogue: its 12 configurations, placements, power curve and derived partitions."""

from __future__ import annotations

import pytest

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import NO_MIG
from wattsched.hardware.partitions import enumerate_partitions, is_maximal, place, validate_placement

A100 = load_gpu("a100-40gb")

EXPECTED_SIZES = {
    1: (7,),
    2: (4, 3),
    3: (4, 2, 1),
    4: (4, 1, 1, 1),
    5: (3, 3),
    6: (2, 2, 3),
    7: (2, 1, 1, 3),
    8: (1, 1, 1, 1, 3),
    9: (2, 2, 2, 1),
    10: (2, 2, 1, 1, 1),
    11: (2, 1, 1, 1, 1, 1),
    12: (1,) * 7,
}
#: P1 Fig. 1 slot layouts (slots 1..7, papers.md §A.2.2) as NVML memory-slot starts: the first slot of every
#: slice, minus one (a 1g.10gb at slot 7 owns memory slots 6-7).
P1_STARTS = {
    1: (0,),
    2: (0, 4),
    3: (0, 4, 6),
    4: (0, 4, 5, 6),
    5: (0, 4),
    6: (0, 2, 4),
    7: (0, 2, 3, 4),
    8: (0, 1, 2, 3, 4),
    9: (0, 2, 4, 6),
    10: (0, 2, 4, 5, 6),
    11: (0, 2, 3, 4, 5, 6),
    12: (0, 1, 2, 3, 4, 5, 6),
}


def test_twelve_configurations_match_the_paper_table_and_slot_layouts() -> None:
    assert A100.configuration_ids == tuple(range(1, 13))
    for config in A100.configurations:
        assert config.compute_sizes == EXPECTED_SIZES[config.ident]
        assert tuple(s.start for s in config.slices) == P1_STARTS[config.ident]
        # memory fills all 8 slots (40 GB) everywhere; only config 5 has a hole in compute
        assert sum(s.size for s in config.slices) == 8
        assert config.total_compute == (6 if config.ident == 5 else 7)
        assert (
            validate_placement([(s.profile, s.start, s.size) for s in config.slices], A100.profiles, 7, 8)
            is None
        )
    # at most one 1g.10gb (P1: "we do not consider configurations with multiple 1g.10gb")
    assert all(sum(s.profile == "1g.10gb" for s in c.slices) <= 1 for c in A100.configurations)


def test_power_curve_and_no_mig() -> None:
    assert A100.power.curve().busy_w == (40.0, 119.0, 160.0, 205.3, 243.9, 247.7, 248.5, 248.5)
    full = A100.configuration(NO_MIG)
    assert not full.mig_enabled and full.total_compute == 7
    assert A100.power_w(full.total_compute) == 248.5
    assert A100.configuration("3") is A100.configuration(3)
    assert A100.compute_sizes == (1, 2, 3, 4, 7) and full.slices[0].duration_index == 5


def test_unknown_configuration_lists_valid() -> None:
    with pytest.raises(ConfigError, match="valid: 1, 2"):
        A100.configuration(13)


def test_roles_are_p1s_choices() -> None:
    assert dict(A100.roles) == {"static": 3, "day": 6, "night": 2, "initial": 2}
    with pytest.raises(ConfigError, match="names no 'weekend'"):
        A100.role("weekend")


def test_derived_partitions_are_valid_maximal_and_distinct() -> None:
    parts = A100.derived_placements
    assert len(parts) == 78 and len(set(parts)) == 78
    assert len(A100.derived_shapes()) == 38
    for placed in parts:
        assert validate_placement(placed, A100.profiles, 7, 8) is None
        assert is_maximal(placed, A100.profiles, 7, 8)
        assert all(not A100.profile(name).media for name, _, _ in placed)
    # Every P1 configuration is one of them.
    named = {tuple((s.profile, s.start, s.size) for s in c.slices) for c in A100.configurations}
    assert named <= set(parts)


def test_enumeration_by_hand_on_a_tiny_gpu() -> None:
    # Two memory slots, two compute slices: "1a" fits at 0 or 1, "2a" only at 0 and fills the card.
    from wattsched.hardware.profiles import InstanceProfile

    tiny = [
        InstanceProfile("1a", 1, 1, 1, 1, 1, ((0, 1), (1, 1)), 2),
        InstanceProfile("2a", 2, 2, 2, 2, 2, ((0, 2),), 1),
    ]
    assert enumerate_partitions(tiny, 2, 2) == [(("2a", 0, 2),), (("1a", 0, 1), ("1a", 1, 1))]
    # With one compute slice only, a single 1a is maximal (the other slot has no compute left).
    assert enumerate_partitions(tiny, 1, 2) == [(("1a", 0, 1),), (("1a", 1, 1),)]


def test_canonical_placement_and_its_refusals() -> None:
    assert place(["3g.20gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"], A100.profiles, 7, 8) == (
        ("1g.5gb", 0, 1),
        ("1g.5gb", 1, 1),
        ("1g.5gb", 2, 1),
        ("1g.5gb", 3, 1),
        ("3g.20gb", 4, 4),
    )
    with pytest.raises(ConfigError, match="cannot be placed"):
        place(["3g.20gb", "3g.20gb", "1g.5gb"], A100.profiles, 7, 8)
    with pytest.raises(ConfigError, match="compute slices"):
        place(["7g.40gb", "1g.5gb"], A100.profiles, 7, 8)
    with pytest.raises(ConfigError, match="unknown profile"):
        place(["8g.80gb"], A100.profiles, 7, 8)
