"""A stand-in for the ``pynvml`` module, backed by a recorded snapshot: the NVML backend runs without a GPU.

Constants, structures and the error class are the real binding's (nvidia-ml-py is installed in the dev venv);
the functions answer from a :class:`FakeBackend` in NVML's units (mW, mJ, bytes) and through the same ctypes
out-parameters the driver fills (placement arrays, counts passed by reference). Instance handles are Python
objects in ``py_object`` arrays.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any

import pynvml

from wattsched.hardware.gpu import GpuError
from wattsched.hardware.gpu.fake import FakeBackend

__all__ = ["PynvmlDouble"]


class PynvmlDouble:
    """Answers the pynvml calls :class:`~wattsched.hardware.gpu.nvml.NvmlBackend` makes."""

    NVMLError = pynvml.NVMLError
    c_nvmlGpuInstancePlacement_t = pynvml.c_nvmlGpuInstancePlacement_t
    c_nvmlGpuInstance_t = ctypes.py_object
    c_nvmlComputeInstance_t = ctypes.py_object

    def __init__(
        self, fake: FakeBackend, *, energy_counter: bool = True, init_error: int | None = None
    ) -> None:
        self.fake = fake
        self.energy_counter = energy_counter
        self.init_error = init_error
        self.calls: list[str] = []
        self.locked: dict[int, tuple[int, int] | None] = {}

    def __getattr__(self, name: str) -> Any:  # constants (NVML_*) come from the real binding
        if name.startswith("NVML_"):
            return getattr(pynvml, name)
        raise AttributeError(name)

    @staticmethod
    def _fail(code: int) -> None:
        raise pynvml.NVMLError(code)

    def _index(self, handle: Any) -> int:
        return int(handle.index)

    # --- library ------------------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            self._fail(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.fake.identity(0).driver

    def nvmlDeviceGetCount(self) -> int:
        return self.fake.device_count()

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        if not 0 <= index < self.fake.device_count():
            self._fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return SimpleNamespace(index=index)

    # --- identity -----------------------------------------------------------------------------------
    def nvmlDeviceGetName(self, handle: Any) -> str:
        return self.fake.identity(self._index(handle)).name

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        return SimpleNamespace(total=self.fake.identity(self._index(handle)).memory_total_bytes)

    def nvmlDeviceGetAttributes(self, handle: Any) -> Any:
        count = self.fake.identity(self._index(handle)).multiprocessor_count
        if count is None:
            self._fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(multiprocessorCount=count)

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]:
        capability = self.fake.identity(self._index(handle)).compute_capability
        if capability is None:
            self._fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return capability  # type: ignore[return-value]

    def nvmlDeviceGetArchitecture(self, handle: Any) -> int:
        architecture = self.fake.identity(self._index(handle)).architecture
        if architecture is None:
            self._fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return architecture  # type: ignore[return-value]

    # --- MIG ----------------------------------------------------------------------------------------
    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        return [int(v) for v in self.fake.mig_mode(self._index(handle))]

    def nvmlDeviceGetGpuInstanceProfileInfo(self, handle: Any, profile_index: int) -> Any:
        for p in self.fake.profiles(self._index(handle)):
            if p.profile_index == profile_index:
                return SimpleNamespace(
                    id=p.nvml_id,
                    sliceCount=p.compute,
                    instanceCount=p.instance_count,
                    multiprocessorCount=p.sms,
                    memorySizeMB=p.memory_mb,
                    name=f"MIG {p.name}".encode(),
                )
        self._fail(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetGpuInstancePossiblePlacements(
        self, handle: Any, profile_id: int, array: Any, count: Any
    ) -> int:
        profile = next(p for p in self.fake.profiles(self._index(handle)) if p.nvml_id == profile_id)
        if array is None:  # NULL: the caller asks how many placements there are
            count._obj.value = len(profile.placements)
            return 0
        if len(array) < len(profile.placements):
            self._fail(pynvml.NVML_ERROR_INSUFFICIENT_SIZE)
        for i, (start, size) in enumerate(profile.placements):
            array[i].start, array[i].size = start, size
        count._obj.value = len(profile.placements)
        return 0

    def nvmlDeviceGetGpuInstances(self, handle: Any, profile_id: int, array: Any, count: Any) -> int:
        index = self._index(handle)
        found = [i for i in self.fake.gpu_instances(index) if i.profile_id == profile_id]
        for position, instance in enumerate(found):
            array[position] = SimpleNamespace(index=index, instance=instance)
        count._obj.value = len(found)
        return 0

    def nvmlGpuInstanceGetInfo(self, gi: Any) -> Any:
        i = gi.instance
        return SimpleNamespace(
            id=i.instance_id, profileId=i.profile_id, placement=SimpleNamespace(start=i.start, size=i.size)
        )

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(self, gi: Any, ci_index: int, engine: int) -> Any:
        profile = next(p for p in self.fake.profiles(gi.index) if p.nvml_id == gi.instance.profile_id)
        if ci_index != pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE + {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}.get(
            profile.compute, 99
        ):
            self._fail(pynvml.NVML_ERROR_NOT_SUPPORTED)  # only the full-size compute profile, for brevity
        return SimpleNamespace(id=ci_index, sliceCount=profile.compute, instanceCount=1)

    def nvmlGpuInstanceGetComputeInstances(self, gi: Any, ci_profile: int, array: Any, count: Any) -> int:
        ids = gi.instance.compute_instance_ids
        for position, ci in enumerate(ids):
            array[position] = SimpleNamespace(gi=gi, id=ci)
        count._obj.value = len(ids)
        return 0

    def nvmlComputeInstanceGetInfo(self, ci: Any) -> Any:
        return SimpleNamespace(id=ci.id)

    def nvmlDeviceCreateGpuInstanceWithPlacement(self, handle: Any, profile_id: int, placement: Any) -> Any:
        index = self._index(handle)
        try:
            created = self.fake.create_gpu_instance(index, profile_id, placement._obj.start)
        except GpuError:
            self._fail(pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES)
        self.calls.append(f"create {profile_id}@{placement._obj.start}")
        return SimpleNamespace(index=index, instance=created)

    def nvmlGpuInstanceCreateComputeInstance(self, gi: Any, ci_profile_id: int) -> Any:
        self.calls.append(f"create-ci {gi.instance.instance_id}")
        return SimpleNamespace(gi=gi, id=0)

    def nvmlComputeInstanceDestroy(self, ci: Any) -> int:
        self.calls.append(f"destroy-ci {ci.gi.instance.instance_id}")
        return 0

    def nvmlGpuInstanceDestroy(self, gi: Any) -> int:
        try:
            self.fake.destroy_gpu_instance(gi.index, gi.instance.instance_id)
        except GpuError:
            self._fail(pynvml.NVML_ERROR_IN_USE)
        self.calls.append(f"destroy {gi.instance.instance_id}")
        return 0

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]:
        return [
            SimpleNamespace(
                pid=p.pid,
                usedGpuMemory=None,
                gpuInstanceId=0xFFFFFFFF if p.gpu_instance_id is None else p.gpu_instance_id,
                computeInstanceId=0xFFFFFFFF if p.compute_instance_id is None else p.compute_instance_id,
            )
            for p in self.fake.processes(self._index(handle))
        ]

    # --- clocks and power ---------------------------------------------------------------------------
    def nvmlDeviceGetSupportedMemoryClocks(self, handle: Any) -> list[int]:
        return list(self.fake.supported_clocks_mhz(self._index(handle)))

    def nvmlDeviceGetSupportedGraphicsClocks(self, handle: Any, memory_mhz: int) -> list[int]:
        return list(self.fake.supported_clocks_mhz(self._index(handle))[memory_mhz])

    def _clock(self, handle: Any, kind: int, which: str) -> int:
        state = self.fake.clocks(self._index(handle))
        name = {pynvml.NVML_CLOCK_SM: "sm", pynvml.NVML_CLOCK_GRAPHICS: "sm", pynvml.NVML_CLOCK_MEM: "mem"}[
            kind
        ]
        return int(getattr(state, f"{name}_{which}_mhz"))

    def nvmlDeviceGetClockInfo(self, handle: Any, kind: int) -> int:
        return self._clock(handle, kind, "now")

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, kind: int) -> int:
        return self._clock(handle, kind, "max")

    def nvmlDeviceGetDefaultApplicationsClock(self, handle: Any, kind: int) -> int:
        return self._clock(handle, kind, "default")

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any) -> list[int]:
        limits = self.fake.power_limits(self._index(handle))
        return [round(limits.min_w * 1000), round(limits.max_w * 1000)]

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any) -> int:
        return round(self.fake.power_limits(self._index(handle)).default_w * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        return round(self.fake.power_limits(self._index(handle)).enforced_w * 1000)

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        return round(self.fake.power_w(self._index(handle)) * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int:
        energy = self.fake.energy_j(self._index(handle))
        if energy is None or not self.energy_counter:
            self._fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return round(energy * 1000)  # type: ignore[operator]

    def nvmlDeviceSetGpuLockedClocks(self, handle: Any, low: int, high: int) -> None:
        self.calls.append(f"lock-sm {low}-{high}")

    def nvmlDeviceSetMemoryLockedClocks(self, handle: Any, low: int, high: int) -> None:
        self.calls.append(f"lock-mem {low}-{high}")

    def nvmlDeviceResetGpuLockedClocks(self, handle: Any) -> None:
        self.calls.append("reset-sm")

    def nvmlDeviceResetMemoryLockedClocks(self, handle: Any) -> None:
        self.calls.append("reset-mem")
