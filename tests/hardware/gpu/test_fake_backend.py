"""The fake backend replays the H200 snapshot exactly, and its energy counter advances as CONTRACT §8 says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.hardware.gpu import BACKEND_ENV, GpuBackend, GpuError, open_backend
from wattsched.hardware.gpu.fake import FakeBackend


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def variant(source: Path, folder: Path, **changes: Any) -> Path:
    facts = json.loads(source.read_text())
    facts.update(changes)
    path = folder / "variant.json"
    path.write_text(json.dumps(facts))
    return path


def test_h200_facts_as_recorded(h200: Path) -> None:
    fake = FakeBackend(h200)
    assert isinstance(fake, GpuBackend)
    assert fake.device_count() == 1
    identity = fake.identity(0)
    assert (identity.name, identity.driver, identity.multiprocessor_count) == (
        "NVIDIA H200",
        "580.159.04",
        132,
    )
    assert identity.memory_total_bytes == 150_754_820_096 and identity.compute_capability == (9, 0)
    assert fake.mig_mode(0) == (False, False)
    limits = fake.power_limits(0)
    assert (limits.min_w, limits.max_w, limits.default_w, limits.enforced_w) == (200.0, 700.0, 700.0, 700.0)
    assert fake.power_w(0) == pytest.approx(84.426)
    clocks = fake.supported_clocks_mhz(0)
    assert sorted(clocks) == [2201, 3201]
    assert len(clocks[3201]) == 110 and clocks[3201][0] == 1980 and clocks[3201][-1] == 345
    state = fake.clocks(0)
    assert (state.sm_max_mhz, state.mem_max_mhz, state.sm_default_mhz, state.mem_default_mhz) == (
        1980,
        3201,
        1980,
        3201,
    )


def test_h200_profiles_skip_unsupported_indices(h200: Path) -> None:
    profiles = {p.name: p for p in FakeBackend(h200).profiles(0)}
    # The README's table: 7 supported profiles out of 18 indices, names without the "MIG " prefix.
    assert sorted(profiles) == [
        "1g.18gb",
        "1g.18gb+me",
        "1g.35gb",
        "2g.35gb",
        "3g.71gb",
        "4g.71gb",
        "7g.141gb",
    ]
    assert profiles["1g.35gb"].nvml_id == 15 and profiles["1g.35gb"].compute == 1
    assert profiles["1g.35gb"].memory_slots == 2 and profiles["1g.35gb"].placements == (
        (0, 2),
        (2, 2),
        (4, 2),
        (6, 2),
    )
    assert profiles["3g.71gb"].placements == ((0, 4), (4, 4)) and profiles["3g.71gb"].sms == 60
    assert profiles["7g.141gb"].memory_slots == 8 and profiles["1g.18gb+me"].media
    assert not profiles["1g.18gb"].media


def test_energy_counter_advances_at_the_idle_power(h200: Path) -> None:
    clock = Clock()
    fake = FakeBackend(h200, clock=clock)
    start_j = fake.energy_j(0)
    assert start_j == pytest.approx(2_419_028 / 1000)  # energy_counter_mj_start, in J
    clock.now_s += 10.0
    assert fake.energy_j(0) - start_j == pytest.approx(844.26)  # 84.426 W x 10 s


def test_fake_power_w_and_set_power_are_piecewise(h200: Path, tmp_path: Path) -> None:
    clock = Clock()
    fake = FakeBackend(variant(h200, tmp_path, fake_power_w=300.0), clock=clock)
    start_j = fake.energy_j(0)
    clock.now_s += 2.0
    fake.set_power_w(0, 500.0)
    clock.now_s += 3.0
    assert fake.energy_j(0) - start_j == pytest.approx(300 * 2 + 500 * 3)
    assert fake.power_w(0) == 500.0


def test_no_energy_counter(h200: Path, tmp_path: Path) -> None:
    assert FakeBackend(variant(h200, tmp_path, energy_counter_mj_start=None)).energy_j(0) is None


def test_instances_and_clocks_change_only_in_memory(h200: Path, tmp_path: Path) -> None:
    path = variant(h200, tmp_path, mig_mode_current_pending=[1, 1])
    before = path.read_text()
    fake = FakeBackend(path)
    first = fake.create_gpu_instance(0, 9, 0)  # 3g.71gb at 0
    assert (first.start, first.size, first.compute_instance_ids) == (0, 4, (0,))
    with pytest.raises(GpuError, match="overlaps"):
        fake.create_gpu_instance(0, 14, 2)  # 2g.35gb at 2 lies inside slots 0..3
    with pytest.raises(GpuError, match="cannot be placed at 1"):
        fake.create_gpu_instance(0, 14, 1)
    second = fake.create_gpu_instance(0, 14, 4)
    assert [i.instance_id for i in fake.gpu_instances(0)] == [first.instance_id, second.instance_id]
    fake.destroy_gpu_instance(0, first.instance_id)
    assert fake.gpu_instances(0) == (second,)
    fake.set_locked_clocks(0, 1500, 3201)
    assert (fake.clocks(0).sm_now_mhz, fake.clocks(0).mem_now_mhz) == (1500, 3201)
    with pytest.raises(GpuError, match="not a supported clock pair"):
        fake.set_locked_clocks(0, 1501, 3201)
    fake.reset_clocks(0)
    assert fake.clocks(0).sm_now_mhz == 345
    assert path.read_text() == before


def test_mig_off_refuses_instances(h200: Path) -> None:
    with pytest.raises(GpuError, match="MIG mode is off"):
        FakeBackend(h200).create_gpu_instance(0, 19, 0)


def test_several_devices_and_unknown_index(h200: Path, tmp_path: Path) -> None:
    facts = json.loads(h200.read_text())
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"devices": [facts, {**facts, "fake_power_w": 250.0}]}))
    fake = FakeBackend(path)
    assert fake.device_count() == 2 and fake.power_w(1) == 250.0
    with pytest.raises(GpuError, match="no GPU with index 2"):
        fake.identity(2)


@pytest.mark.parametrize(
    ("content", "piece"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"devices": []}', "must be a JSON object"),
        ("{}", "key 'name'"),
        ('{"name": "X", "memory_total_bytes": 1, "power_limit_enforced_mw": 1}', "power_usage_idle_mw"),
        ('{"name": "X", "memory_total_bytes": -1}', "memory_total_bytes"),
    ],
)
def test_corrupt_snapshots_are_one_input_error(tmp_path: Path, content: str, piece: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError, match=piece) as caught:
        FakeBackend(path)
    assert str(path) in str(caught.value)


def test_corrupt_profile_and_missing_file(h200: Path, tmp_path: Path) -> None:
    path = variant(h200, tmp_path, gpu_instance_profiles={"0": {"id": 19, "name": "MIG 1g.18gb"}})
    with pytest.raises(InputError, match=r"gpu_instance_profiles\['0'\] is malformed"):
        FakeBackend(path)
    with pytest.raises(InputError, match="snapshot not found"):
        FakeBackend(tmp_path / "missing.json")


def test_open_backend_spec_and_environment(h200: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(open_backend(f"fake:{h200}"), FakeBackend)
    monkeypatch.setenv(BACKEND_ENV, f"fake:{h200}")
    assert open_backend(None).name == f"fake:{h200}"
    with pytest.raises(ConfigError, match="'nvml' or 'fake:FILE'"):
        open_backend("fake:")
    monkeypatch.setenv(BACKEND_ENV, "cuda")
    with pytest.raises(ConfigError, match=BACKEND_ENV):
        open_backend(None)
