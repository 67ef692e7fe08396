"""The NVML backend's plumbing (ctypes out-parameters, mW/mJ → W/J, error mapping) against a pynvml double.

The double answers from the H200 snapshot through the fake backend, so the NVML backend must reproduce the
fake's facts exactly; the real ``pynvml`` import path is checked too (this machine has no driver).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pynvml
import pytest
from pynvml_double import PynvmlDouble

from wattsched.hardware.gpu import GpuError, open_backend
from wattsched.hardware.gpu.fake import FakeBackend
from wattsched.hardware.gpu.nvml import NvmlBackend, import_pynvml
from wattsched.hardware.gpu.snapshot import record_facts


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def mig_on(h200: Path, folder: Path, **extra: object) -> Path:
    facts = json.loads(h200.read_text())
    facts.update(mig_mode_current_pending=[1, 1], **extra)
    path = folder / "mig_on.json"
    path.write_text(json.dumps(facts))
    return path


class FrozenClock:
    def __call__(self) -> float:
        return 5.0


def test_every_read_matches_the_fake(h200: Path) -> None:
    fake = FakeBackend(h200, clock=FrozenClock())
    nvml = NvmlBackend(PynvmlDouble(fake))
    assert nvml.device_count() == 1
    assert nvml.identity(0) == fake.identity(0)
    assert nvml.mig_mode(0) == fake.mig_mode(0)
    assert nvml.profiles(0) == fake.profiles(0)
    assert nvml.supported_clocks_mhz(0) == fake.supported_clocks_mhz(0)
    assert nvml.clocks(0) == fake.clocks(0)
    assert nvml.power_limits(0) == fake.power_limits(0)
    assert nvml.power_w(0) == pytest.approx(84.426)  # 84426 mW
    assert nvml.energy_j(0) == pytest.approx(2419.028)  # 2419028 mJ
    assert nvml.processes(0) == ()
    assert nvml.gpu_instances(0) == ()  # MIG off: no instances asked for


def test_a_recording_through_nvml_equals_one_through_the_fake(h200: Path) -> None:
    fake = FakeBackend(h200, clock=FrozenClock())
    via_nvml = record_facts(NvmlBackend(PynvmlDouble(fake)), 0)
    via_fake = record_facts(fake, 0)
    for facts in (via_nvml, via_fake):
        facts.pop("recorded_by"), facts.pop("recorded_at")
    assert via_nvml == via_fake


def test_instances_created_and_destroyed_through_nvml(h200: Path, tmp_path: Path) -> None:
    double = PynvmlDouble(FakeBackend(mig_on(h200, tmp_path)))
    nvml = NvmlBackend(double)
    made = nvml.create_gpu_instance(0, 5, 0)  # 4g.71gb at 0
    other = nvml.create_gpu_instance(0, 9, 4)  # 3g.71gb at 4
    assert [(i.profile_id, i.start, i.size) for i in nvml.gpu_instances(0)] == [(5, 0, 4), (9, 4, 4)]
    assert made.compute_instance_ids == (0,)
    with pytest.raises(GpuError, match="NVML create GPU instance failed"):
        nvml.create_gpu_instance(0, 19, 1)
    nvml.destroy_gpu_instance(0, made.instance_id)
    assert double.calls[-2:] == [f"destroy-ci {made.instance_id}", f"destroy {made.instance_id}"]
    assert [i.instance_id for i in nvml.gpu_instances(0)] == [other.instance_id]
    with pytest.raises(GpuError, match="no GPU instance with id 99"):
        nvml.destroy_gpu_instance(0, 99)


def test_processes_on_instances(h200: Path, tmp_path: Path) -> None:
    path = mig_on(
        h200,
        tmp_path,
        mig_instances=[{"id": 3, "profile_id": 19, "start": 0, "size": 1}],
        processes=[{"pid": 4242, "gpu_instance_id": 3, "compute_instance_id": 0}, {"pid": 7}],
    )
    nvml = NvmlBackend(PynvmlDouble(FakeBackend(path)))
    assert [(p.pid, p.gpu_instance_id, p.compute_instance_id) for p in nvml.processes(0)] == [
        (4242, 3, 0),
        (7, None, None),
    ]  # NVML's "not available" id becomes None
    with pytest.raises(GpuError, match="NVML destroy GPU instance failed"):
        nvml.destroy_gpu_instance(0, 3)


def test_clock_locks_go_to_nvml(h200: Path) -> None:
    double = PynvmlDouble(FakeBackend(h200))
    nvml = NvmlBackend(double)
    nvml.set_locked_clocks(0, 1410, 3201)
    nvml.reset_clocks(0)
    assert double.calls == ["lock-mem 3201-3201", "lock-sm 1410-1410", "reset-sm", "reset-mem"]


def test_no_energy_counter_is_none(h200: Path) -> None:
    assert NvmlBackend(PynvmlDouble(FakeBackend(h200), energy_counter=False)).energy_j(0) is None


def test_unknown_index_and_init_errors(h200: Path) -> None:
    with pytest.raises(GpuError, match=r"no GPU with index 3 \(NVML sees 1: 0..0\)"):
        NvmlBackend(PynvmlDouble(FakeBackend(h200))).identity(3)
    with pytest.raises(GpuError, match="NVML library not found"):
        NvmlBackend(PynvmlDouble(FakeBackend(h200), init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    with pytest.raises(GpuError, match="NVML could not start: Driver Not Loaded"):
        NvmlBackend(PynvmlDouble(FakeBackend(h200), init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))


def test_the_real_binding_on_a_machine_without_a_driver() -> None:
    # nvidia-ml-py is installed in the dev venv; this machine has no libnvidia-ml, so opening NVML says so.
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:  # pragma: no cover - only on a machine with an NVIDIA driver
        pynvml.nvmlShutdown()
        pytest.skip("an NVIDIA driver is present")
    with pytest.raises(GpuError, match="NVML library not found"):
        open_backend("nvml")


def test_missing_binding_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml now raises ImportError
    with pytest.raises(GpuError, match=r"needs the \[nvml\] extra"):
        import_pynvml()
