"""The hardware catalogue: conformance of every entry, the loader family, the H200 entry against its NVML
read-out, and one-line errors naming the file and field for bad entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.errors import ConfigError, WattschedError
from wattsched.hardware import catalogue
from wattsched.hardware._toml import CatalogueError
from wattsched.hardware.catalogue import available, load, load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.hardware.partitions import validate_placement

GPUS = available("gpu")
A100_TEXT = (Path(catalogue.__file__).parent / "data" / "gpus" / "a100-40gb.toml").read_text()


def test_the_catalogue_lists_the_four_gpus_and_the_dvfs_models() -> None:
    assert GPUS == ["a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb"]
    assert available("dvfs") == ["gtx1080ti", "rtx2070s"]
    with pytest.raises(ConfigError, match="valid: dvfs, gpu"):
        available("tpu")


@pytest.mark.parametrize("name", GPUS)
def test_every_entry_conforms(name: str) -> None:
    gpu = load_gpu(name)
    assert isinstance(gpu, MigGpu) and gpu.name == name and gpu.sources
    for profile in gpu.profiles:  # profiles consistent with their placements
        assert profile.placements and all(size == profile.memory_slots for _, size in profile.placements)
        assert all(start >= 0 and start + size <= gpu.memory_slots for start, size in profile.placements)
        assert 1 <= profile.compute <= gpu.compute_slices and profile.max_instances <= len(profile.placements)
    for curve in gpu.power.curves:  # power monotone in busy slices, from the idle power up
        assert len(curve.busy_w) == gpu.compute_slices + 1 and curve.busy_w[0] == gpu.power.idle_w
        assert all(b >= a for a, b in zip(curve.busy_w, curve.busy_w[1:], strict=False))
    for config in gpu.configurations:  # configurations placeable
        placed = [(s.profile, s.start, s.size) for s in config.slices]
        assert validate_placement(placed, gpu.profiles, gpu.compute_slices, gpu.memory_slots) is None
    assert {r for r, _ in gpu.roles} == {"static", "day", "night", "initial"}
    assert len(gpu.derived_placements) > 0 and gpu.compute_sizes == (1, 2, 3, 4, 7)
    assert gpu.power.estimated == (name in ("a100-80gb", "h100-80gb"))


def test_h200_entry_is_exactly_its_nvml_read_out(repo_data: Path) -> None:
    facts = json.loads((repo_data / "hardware" / "h200" / "nvml_facts.json").read_text())
    gpu = load_gpu("h200-141gb")
    nvml = {p["name"].removeprefix("MIG "): p for p in facts["gpu_instance_profiles"].values() if "id" in p}
    assert {p.name for p in gpu.profiles} == set(nvml)
    for profile in gpu.profiles:
        raw = nvml[profile.name]
        assert (profile.nvml_id, profile.compute, profile.sms, profile.memory_mb, profile.max_instances) == (
            raw["id"],
            raw["sliceCount"],
            raw["multiprocessorCount"],
            raw["memorySizeMB"],
            raw["instanceCount"],
        )
        assert [list(p) for p in profile.placements] == raw["placements"]
    assert gpu.sms == facts["multiprocessor_count"]
    assert gpu.power.idle_w == pytest.approx(facts["power_usage_idle_mw"] / 1000, abs=0.05)
    assert gpu.power.cap_w == facts["power_limit_enforced_mw"] / 1000
    assert (
        gpu.clocks is not None and list(gpu.clocks.sm_mhz) == facts["supported_graphics_clocks_mhz"]["3201"]
    )
    assert list(gpu.clocks.mem_mhz) == facts["supported_mem_clocks_mhz"]
    # The 12 P1 shapes with this card's profiles: cfg 3 = 4g.71gb + 2g.35gb + 1g.35gb.
    assert gpu.configuration(3).label() == "4g.71gb@0 + 2g.35gb@4 + 1g.35gb@6"


def test_a_path_loads_like_a_name_and_a_gpu_passes_through(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(A100_TEXT.replace('catalogue = "a100-40gb"', 'catalogue = "mine"'))
    gpu = load("gpu", path)
    assert gpu.name == "mine" and gpu.configurations == load_gpu("a100-40gb").configurations
    assert load_gpu(gpu) is gpu and load_gpu(str(path)).name == "mine"


def test_an_entry_without_named_configurations_derives_them(tmp_path: Path) -> None:
    head, _, _ = A100_TEXT.partition("# P1's 12 configurations")
    _, _, power = A100_TEXT.partition("\n[power]")
    path = tmp_path / "derived.toml"
    path.write_text(head + "\n[power]" + power)
    gpu = load_gpu(path)
    assert len(gpu.configurations) == len(gpu.derived_shapes()) == 38
    assert gpu.configurations[0].label() == "7g.40gb@0" and gpu.roles == ()
    with pytest.raises(ConfigError, match="names no 'static'"):
        gpu.role("static")


def test_an_unknown_gpu_lists_the_catalogue() -> None:
    with pytest.raises(ConfigError, match="unknown GPU 'b200'; the catalogue has: a100-40gb, a100-80gb"):
        load_gpu("b200")


BAD = [
    (
        'placements = [[0, 4]]\n\n[[profile]]\nname = "7g.40gb"',
        'placements = [[0, 4], [2, 4]]\n\n[[profile]]\nname = "7g.40gb"',
        "profile[5].placements",
    ),
    ("[power]\nidle_w = 40.0", "[power]\nidle_w = 40.0\nidle_watts = 3", "power"),
    ("busy_w = [119.0,", "busy_w = [-119.0,", "power.curves.p1.busy_w"),
    ('slices = ["4g.20gb", "3g.20gb"]', 'slices = ["4g.20gb", "4g.20gb"]', "configuration[1].slices"),
    ('slices = ["4g.20gb", "3g.20gb"]', 'slices = ["4g.20gb@0", "3g.20gb@2"]', "configuration[1].slices"),
    ("static = 3", "static = 13", "roles.static"),
    ("compute_slices = 7", 'compute_slices = "seven"', "gpu.compute_slices"),
    ("schema = 1", "schema = 2", "schema"),
]


@pytest.mark.parametrize(("old", "new", "field"), BAD)
def test_a_bad_entry_names_the_file_and_the_field(tmp_path: Path, old: str, new: str, field: str) -> None:
    assert old in A100_TEXT
    path = tmp_path / "bad.toml"
    path.write_text(A100_TEXT.replace(old, new, 1))
    with pytest.raises(CatalogueError) as info:
        load_gpu(path)
    message = str(info.value)
    assert message.startswith(f"{path}: field '{field}'") and "\n" not in message


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError, match="file not found"):
        load_gpu(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[gpu\n")
    with pytest.raises(CatalogueError, match="invalid TOML"):
        load_gpu(broken)
    assert issubclass(CatalogueError, WattschedError)
