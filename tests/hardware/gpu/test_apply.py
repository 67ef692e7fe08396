"""Plans carried out on the fake GPU: final instances are the target's; the guards refuse before a change."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu import GpuError
from wattsched.hardware.gpu.apply import apply_plan, current_layout
from wattsched.hardware.gpu.fake import FakeBackend
from wattsched.hardware.mig_plan import (
    GpuLayouts,
    Layout,
    MigGeometry,
    ProfileRule,
    layout_text,
    parse_layout,
    plan_repartition,
)

# The A100-40GB has the H200's NVML profile ids and placements under other names (NVML reports both).
A100_NAMES = {
    "1g.18gb": "1g.5gb",
    "1g.18gb+me": "1g.5gb+me",
    "1g.35gb": "1g.10gb",
    "2g.35gb": "2g.10gb",
    "3g.71gb": "3g.20gb",
    "4g.71gb": "4g.20gb",
    "7g.141gb": "7g.40gb",
}
# P1's 12 configurations as the catalogue places them.
P1 = [layout_text(layout) for _, layout in GpuLayouts.from_catalogue(load_gpu("a100-40gb")).configurations]


def facts_of(repo_data: Path, *, a100: bool = False) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((repo_data / "hardware" / "h200" / "nvml_facts.json").read_text())
    facts.update(mig_mode_current_pending=[1, 1], fake_root=True)
    if a100:
        facts["name"] = "NVIDIA A100-SXM4-40GB"
        for profile in facts["gpu_instance_profiles"].values():
            if "name" in profile:
                profile["name"] = "MIG " + A100_NAMES[profile["name"].removeprefix("MIG ")]
    return facts


def geometry_of(fake: FakeBackend) -> MigGeometry:
    return MigGeometry.from_rules(
        "gpu", [ProfileRule(p.name, p.compute, p.placements) for p in fake.profiles(0)]
    )


def gpu_with(facts: dict[str, Any], folder: Path, layout: Layout, **extra: Any) -> FakeBackend:
    ids = {
        p["name"].removeprefix("MIG "): p["id"] for p in facts["gpu_instance_profiles"].values() if "id" in p
    }
    instances = [
        {"id": n, "profile_id": ids[i.profile], "start": i.start, "size": i.size}
        for n, i in enumerate(layout, start=1)
    ]
    path = folder / "gpu.json"
    path.write_text(json.dumps({**facts, "mig_instances": instances, **extra}))
    return FakeBackend(path)


def test_every_pair_of_p1_configurations_on_the_fake(repo_data: Path, tmp_path: Path) -> None:
    facts = facts_of(repo_data, a100=True)
    geometry = geometry_of(gpu_with(facts, tmp_path, ()))
    layouts = [parse_layout(text, geometry) for text in P1]
    for source, target in itertools.product(layouts, repeat=2):
        fake = gpu_with(facts, tmp_path, source)
        steps = plan_repartition(geometry, source, target)
        done = apply_plan(fake, 0, source, steps)  # the fake refuses any create that overlaps
        assert current_layout(fake, 0)[0] == target and len(done) == len(steps)


def test_kept_instances_keep_their_nvml_ids(repo_data: Path, tmp_path: Path) -> None:
    facts = facts_of(repo_data)
    fake = gpu_with(facts, tmp_path, ())
    geometry = geometry_of(fake)
    source = parse_layout("4g.71gb@0,2g.35gb@4,1g.35gb@6", geometry)
    target = parse_layout("4g.71gb@0,1g.18gb@4,1g.18gb@5,1g.35gb@6", geometry)
    fake = gpu_with(facts, tmp_path, source)
    before = current_layout(fake, 0)[1]
    apply_plan(fake, 0, source, plan_repartition(geometry, source, target))
    after = current_layout(fake, 0)[1]
    for kept in set(source) & set(target):
        assert after[kept].instance_id == before[kept].instance_id


def test_h200_sample_replayed_on_the_fake(repo_data: Path, tmp_path: Path) -> None:
    facts = facts_of(repo_data)
    geometry = geometry_of(gpu_with(facts, tmp_path, ()))
    layouts = geometry.layouts()
    sample = layouts[:: max(len(layouts) // 8, 1)]
    for source, target in itertools.product(sample, repeat=2):
        fake = gpu_with(facts, tmp_path, source)
        apply_plan(fake, 0, source, plan_repartition(geometry, source, target))
        assert current_layout(fake, 0)[0] == target


@pytest.mark.parametrize(
    ("extra", "piece"),
    [
        ({"fake_root": False}, "needs root"),
        ({"mig_mode_current_pending": [0, 0]}, "MIG mode is off"),
        (
            {"processes": [{"pid": 4242, "gpu_instance_id": 2, "compute_instance_id": 0}]},
            "process 4242 runs on 3g.71gb@4",
        ),
    ],
)
def test_guards_refuse_before_any_change(
    repo_data: Path, tmp_path: Path, extra: dict[str, Any], piece: str
) -> None:
    facts = facts_of(repo_data)
    geometry = geometry_of(gpu_with(facts, tmp_path, ()))
    source = parse_layout("3g.71gb@0,3g.71gb@4", geometry)  # instance ids 1 and 2
    target = parse_layout("7g.141gb@0", geometry)
    fake = gpu_with(facts, tmp_path, source, **extra)
    before = fake.gpu_instances(0)
    with pytest.raises(GpuError, match=piece) as caught:
        apply_plan(fake, 0, source, plan_repartition(geometry, source, target))
    assert "nothing changed" in str(caught.value)
    assert fake.gpu_instances(0) == before


def test_a_process_on_a_kept_instance_is_fine(repo_data: Path, tmp_path: Path) -> None:
    facts = facts_of(repo_data)
    geometry = geometry_of(gpu_with(facts, tmp_path, ()))
    source = parse_layout("3g.71gb@0,3g.71gb@4", geometry)
    target = parse_layout("3g.71gb@0,2g.35gb@4,1g.35gb@6", geometry)
    fake = gpu_with(facts, tmp_path, source, processes=[{"pid": 1, "gpu_instance_id": 1}])
    apply_plan(fake, 0, source, plan_repartition(geometry, source, target))
    assert current_layout(fake, 0)[0] == target


def test_the_gpu_must_hold_the_source_layout(repo_data: Path, tmp_path: Path) -> None:
    facts = facts_of(repo_data)
    geometry = geometry_of(gpu_with(facts, tmp_path, ()))
    fake = gpu_with(facts, tmp_path, parse_layout("7g.141gb@0", geometry))
    source = parse_layout("3g.71gb@0,3g.71gb@4", geometry)
    expected = "has 7g.141gb@0, not the plan's source 3g.71gb@0,3g.71gb@4"
    with pytest.raises(GpuError, match=re.escape(expected)):
        apply_plan(fake, 0, source, plan_repartition(geometry, source, ()))
    a100 = geometry_of(gpu_with(facts_of(repo_data, a100=True), tmp_path, ()))
    empty = gpu_with(facts, tmp_path, ())
    with pytest.raises(GpuError, match=re.escape("no MIG profile 7g.40gb")):
        apply_plan(empty, 0, (), plan_repartition(a100, (), parse_layout("7g.40gb@0", a100)))
