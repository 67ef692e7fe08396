"""Repartition plans: replayed step by step they reach the target, never overlap, keep shared instances."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import available, load_gpu
from wattsched.hardware.gpu.fake import parse_profiles
from wattsched.hardware.mig_plan import (
    GpuLayouts,
    MigGeometry,
    MigInstance,
    PlanStep,
    ProfileRule,
    layout_counts,
    layout_text,
    parse_layout,
    plan_repartition,
    replay,
)

# A100-40GB placements as NVML reports them (8 memory slots).
A100 = MigGeometry.from_rules("a100-40gb", [
    ProfileRule("1g.5gb", 1, tuple((s, 1) for s in range(7))),
    ProfileRule("1g.10gb", 1, ((0, 2), (2, 2), (4, 2), (6, 2))),
    ProfileRule("2g.10gb", 2, ((0, 2), (2, 2), (4, 2))),
    ProfileRule("3g.20gb", 3, ((0, 4), (4, 4))),
    ProfileRule("4g.20gb", 4, ((0, 4),)),
    ProfileRule("7g.40gb", 7, ((0, 8),)),
])  # fmt: skip

# P1's 12 configurations (papers.md §A.2.2) with P1's slots 1..7 as memory-slot starts 0..6.
P1 = {
    1: "7g.40gb@0", 2: "4g.20gb@0,3g.20gb@4", 3: "4g.20gb@0,2g.10gb@4,1g.10gb@6",
    4: "4g.20gb@0,1g.5gb@4,1g.5gb@5,1g.10gb@6", 5: "3g.20gb@0,3g.20gb@4", 6: "2g.10gb@0,2g.10gb@2,3g.20gb@4",
    7: "2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4", 8: "1g.5gb@0,1g.5gb@1,1g.5gb@2,1g.5gb@3,3g.20gb@4",
    9: "2g.10gb@0,2g.10gb@2,2g.10gb@4,1g.10gb@6", 10: "2g.10gb@0,2g.10gb@2,1g.5gb@4,1g.5gb@5,1g.10gb@6",
    11: "2g.10gb@0,1g.5gb@2,1g.5gb@3,1g.5gb@4,1g.5gb@5,1g.10gb@6",
    12: "1g.5gb@0,1g.5gb@1,1g.5gb@2,1g.5gb@3,1g.5gb@4,1g.5gb@5,1g.10gb@6",
}  # fmt: skip


def h200_geometry(repo_data: Path) -> MigGeometry:
    facts = json.loads((repo_data / "hardware" / "h200" / "nvml_facts.json").read_text())
    profiles = parse_profiles(facts["gpu_instance_profiles"], "h200")
    return MigGeometry.from_rules(
        "h200-141gb", [ProfileRule(p.name, p.compute, p.placements) for p in profiles]
    )


def check_plan(
    geometry: MigGeometry, source: tuple[MigInstance, ...], target: tuple[MigInstance, ...]
) -> None:
    steps = plan_repartition(geometry, source, target)
    # Replaying checks every intermediate layout: no overlap, valid placements, at most the compute slices.
    assert replay(geometry, source, steps) == tuple(sorted(target))
    shared = set(source) & set(target)
    assert len(steps) == len(set(source) ^ set(target))  # minimal: only what differs is touched
    assert not any(step.instance in shared for step in steps)
    ops = [step.op for step in steps]
    assert ops == sorted(ops, key=lambda op: op != "destroy")  # every destroy before every create


def test_every_pair_of_p1_configurations() -> None:
    layouts = {ident: parse_layout(text, A100) for ident, text in P1.items()}
    for first, second in itertools.product(layouts, repeat=2):
        check_plan(A100, layouts[first], layouts[second])


def test_plan_3_to_4_by_hand() -> None:
    # 3 = 4g@0 2g@4 1g.10gb@6, 4 = 4g@0 1g.5gb@4 1g.5gb@5 1g.10gb@6: keep 4g@0 and 1g.10gb@6.
    steps = plan_repartition(A100, parse_layout(P1[3], A100), parse_layout(P1[4], A100))
    assert [step.to_dict() for step in steps] == [
        {"op": "destroy", "profile": "2g.10gb", "start": 4, "size": 2},
        {"op": "create", "profile": "1g.5gb", "start": 4, "size": 1},
        {"op": "create", "profile": "1g.5gb", "start": 5, "size": 1},
    ]
    assert plan_repartition(A100, parse_layout(P1[5], A100), parse_layout(P1[5], A100)) == ()


def test_a100_derived_layouts() -> None:
    layouts = A100.layouts()
    # 78 maximal layouts of the five non-media profiles; P1's 12 are among them.
    assert len(layouts) == 78 and len(set(layouts)) == 78
    assert all(parse_layout(text, A100) in layouts for text in P1.values())
    assert layouts[0] == (MigInstance(0, 8, "7g.40gb"),)


def test_h200_sample_of_pairs(repo_data: Path) -> None:
    h200 = h200_geometry(repo_data)
    assert (h200.memory_slots, h200.compute_slices) == (8, 7)
    layouts = h200.layouts()
    assert all(not any(i.profile.endswith("+me") for i in layout) for layout in layouts)
    sample = layouts[:: max(len(layouts) // 12, 1)]
    for first, second in itertools.product(sample, repeat=2):
        check_plan(h200, first, second)
    with_media = parse_layout("1g.18gb+me@0,1g.18gb@1,2g.35gb@2,3g.71gb@4", h200)
    check_plan(h200, with_media, layouts[0])


@st.composite
def layout_pairs(draw: st.DrawFn) -> tuple[tuple[MigInstance, ...], tuple[MigInstance, ...]]:
    """Two arbitrary valid A100 layouts (not only maximal ones): random instances kept while they fit."""

    def one() -> tuple[MigInstance, ...]:
        chosen: list[MigInstance] = []
        for instance in draw(st.permutations(A100.instances())):
            if draw(st.booleans()):
                try:
                    A100.check([*chosen, instance])
                except ConfigError:
                    continue
                chosen.append(instance)
        return tuple(sorted(chosen))

    return one(), one()


@given(layout_pairs())
def test_plans_between_arbitrary_layouts(
    pair: tuple[tuple[MigInstance, ...], tuple[MigInstance, ...]],
) -> None:
    check_plan(A100, *pair)


def test_place_counts() -> None:
    assert A100.place({"1g.5gb": 4, "3g.20gb": 1}) == parse_layout(P1[8], A100)
    assert A100.place({"3g.20gb": 2}) == parse_layout(P1[5], A100)
    # 1g.10gb needs a 2-slot placement: seven of them cannot fit in 8 slots; 4g + 4g share the one placement.
    assert A100.place({"1g.10gb": 5}) is None and A100.place({"4g.20gb": 2}) is None
    assert A100.place({"1g.5gb": 8}) is None  # eight compute slices on a seven-slice GPU
    assert A100.place({}) == ()
    # Placement backtracks: the 3g.20gb first at 0 leaves the two 2g.10gb only one placement (4) to share.
    assert A100.place({"2g.10gb": 2, "3g.20gb": 1}) == parse_layout("2g.10gb@0,2g.10gb@2,3g.20gb@4", A100)
    with pytest.raises(ConfigError, match=re.escape("no MIG profile '9g.80gb'")):
        A100.place({"9g.80gb": 1})


def test_layout_text_round_trip_and_counts() -> None:
    for text in P1.values():
        assert layout_text(parse_layout(text, A100)) == text
    assert layout_counts(parse_layout(P1[11], A100)) == {"2g.10gb": 1, "1g.5gb": 4, "1g.10gb": 1}
    assert parse_layout("empty", A100) == () and layout_text(()) == "empty"


@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("4g.20gb@1", "cannot start at 1"),
        ("4g.20gb", "expected PROFILE@START"),
        ("4g.20gb@x", "expected PROFILE@START"),
        ("4g.20gb@0,3g.20gb@0", "overlap"),
        ("2g.10gb@2,1g.5gb@3", "overlap"),
        ("5g.30gb@0", "no MIG profile '5g.30gb'"),
    ],
)
def test_bad_layouts(text: str, piece: str) -> None:
    with pytest.raises(ConfigError, match=piece):
        parse_layout(text, A100)


def test_replay_refuses_impossible_steps() -> None:
    source = parse_layout(P1[2], A100)
    with pytest.raises(ConfigError, match=re.escape("step 1: create 7g.40gb@0 overlaps 4g.20gb@0")):
        replay(A100, source, [PlanStep("create", MigInstance(0, 8, "7g.40gb"))])
    with pytest.raises(ConfigError, match=re.escape("step 1: destroy 7g.40gb@0: no such instance")):
        replay(A100, source, [PlanStep("destroy", MigInstance(0, 8, "7g.40gb"))])


def test_the_catalogue_a100_is_p1_and_nvml_geometry() -> None:
    gpu = GpuLayouts.from_catalogue(load_gpu("a100-40gb"))
    assert gpu.geometry.memory_slots == 8 and gpu.geometry.compute_slices == 7
    for rule in A100.profiles:
        assert gpu.geometry.rule(rule.name).placements == rule.placements
    assert [layout_text(layout) for _, layout in gpu.configurations] == list(P1.values())


@pytest.mark.parametrize("name", available("gpu"))
def test_every_pair_of_catalogue_configurations(name: str) -> None:
    gpu = GpuLayouts.from_catalogue(load_gpu(name))
    layouts = [layout for _, layout in gpu.configurations]
    for first, second in itertools.product(layouts, repeat=2):
        check_plan(gpu.geometry, first, second)


def test_sample_of_derived_h200_partitions() -> None:
    entry = load_gpu("h200-141gb")
    gpu = GpuLayouts.from_catalogue(entry)
    derived = [
        tuple(sorted(MigInstance(start, size, name) for name, start, size in placed))
        for placed in entry.derived_placements
    ]
    assert len(derived) == len(gpu.geometry.layouts())  # the catalogue's enumeration and ours agree
    assert set(derived) == set(gpu.geometry.layouts())
    for first, second in itertools.product(derived[::7], repeat=2):
        check_plan(gpu.geometry, first, second)


def test_at_most_one_media_slice_on_the_h200() -> None:
    gpu = GpuLayouts.from_catalogue(load_gpu("h200-141gb"))
    assert gpu.geometry.rule("1g.18gb+me").max_instances == 1
    with pytest.raises(ConfigError, match=re.escape("2 instances of 1g.18gb+me; h200-141gb allows 1")):
        parse_layout("1g.18gb+me@0,1g.18gb+me@1", gpu.geometry)
    assert gpu.geometry.place({"1g.18gb+me": 2}) is None
    with_media = gpu.geometry.layouts(media=True)
    assert all(sum(i.profile == "1g.18gb+me" for i in layout) <= 1 for layout in with_media)
