"""``nvml``: the real GPUs of this machine through NVIDIA's official binding ``nvidia-ml-py`` (``pynvml``).

Never parses ``nvidia-smi``. The binding is imported when the backend is opened, not when wattsched is
imported, so the package works without the ``[nvml]`` extra; a missing binding, a missing driver library and
every NVML error become one :class:`GpuError` line. NVML's mW and mJ become W and J here.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any, TypeVar

from wattsched.hardware.gpu.backend import (
    ClockState,
    GpuError,
    GpuIdentity,
    GpuInstance,
    GpuProcess,
    NvmlProfile,
    PowerLimits,
)

__all__ = ["NvmlBackend", "import_pynvml"]

T = TypeVar("T")

#: NVML_GPU_INSTANCE_PROFILE_COUNT of current drivers; older bindings may lack the constant.
_PROFILE_INDEX_COUNT = 0x12
#: NVML's "this process or instance id is not known" (NVML_VALUE_NOT_AVAILABLE for an unsigned int).
_NOT_AVAILABLE_UINT = 0xFFFFFFFF


def import_pynvml() -> Any:
    """The ``pynvml`` module, or one clear :class:`GpuError` when the ``[nvml]`` extra is missing."""
    try:
        import pynvml  # the [nvml] extra (nvidia-ml-py); deferred so the core imports without it
    except ImportError:
        raise GpuError(
            "the NVML backend needs the [nvml] extra: pip install 'wattsched[nvml]' "
            "(nvidia-ml-py); or use --backend fake:FILE"
        ) from None
    return pynvml


class NvmlBackend:
    """The GPUs NVML sees. ``pynvml`` may be injected (tests use a double); otherwise it is imported."""

    def __init__(self, pynvml: Any | None = None) -> None:
        self.name = "nvml"
        self._nv = pynvml if pynvml is not None else import_pynvml()
        try:
            self._nv.nvmlInit()
        except self._nv.NVMLError as exc:
            if exc.value == self._nv.NVML_ERROR_LIBRARY_NOT_FOUND:
                raise GpuError(
                    "NVML library not found (libnvidia-ml.so.1): no NVIDIA driver on this machine; "
                    "use --backend fake:FILE to replay a snapshot"
                ) from None
            raise GpuError(f"NVML could not start: {exc}") from None
        self._handles: dict[int, Any] = {}

    def _call(self, what: str, function: Callable[..., T], *args: Any) -> T:
        try:
            return function(*args)
        except self._nv.NVMLError as exc:
            raise GpuError(f"NVML {what} failed: {exc}") from None

    def _handle(self, index: int) -> Any:
        if index not in self._handles:
            count = self.device_count()
            if isinstance(index, bool) or not 0 <= index < count:
                raise GpuError(f"no GPU with index {index} (NVML sees {count}: 0..{count - 1})")
            self._handles[index] = self._call("device handle", self._nv.nvmlDeviceGetHandleByIndex, index)
        return self._handles[index]

    def _optional(self, function: Callable[..., T], *args: Any) -> T | None:
        try:
            return function(*args)
        except self._nv.NVMLError:
            return None

    # --- reading -------------------------------------------------------------------------------------
    def device_count(self) -> int:
        return int(self._call("device count", self._nv.nvmlDeviceGetCount))

    def identity(self, index: int) -> GpuIdentity:
        handle = self._handle(index)
        name = self._call("name", self._nv.nvmlDeviceGetName, handle)
        driver = self._call("driver version", self._nv.nvmlSystemGetDriverVersion)
        memory = self._call("memory info", self._nv.nvmlDeviceGetMemoryInfo, handle)
        cores = self._optional(self._nv.nvmlDeviceGetAttributes, handle)
        capability = self._optional(self._nv.nvmlDeviceGetCudaComputeCapability, handle)
        return GpuIdentity(
            index=index,
            name=_text(name),
            driver=_text(driver),
            memory_total_bytes=int(memory.total),
            multiprocessor_count=None if cores is None else int(cores.multiprocessorCount),
            architecture=self._optional(self._nv.nvmlDeviceGetArchitecture, handle),
            compute_capability=None if capability is None else (int(capability[0]), int(capability[1])),
        )

    def mig_mode(self, index: int) -> tuple[bool, bool]:
        handle = self._handle(index)
        try:
            current, pending = self._nv.nvmlDeviceGetMigMode(handle)
        except self._nv.NVMLError as exc:
            if exc.value == self._nv.NVML_ERROR_NOT_SUPPORTED:
                return False, False  # a GPU without MIG
            raise GpuError(f"NVML MIG mode failed: {exc}") from None
        return bool(current), bool(pending)

    def profiles(self, index: int) -> tuple[NvmlProfile, ...]:
        handle = self._handle(index)
        count = int(getattr(self._nv, "NVML_GPU_INSTANCE_PROFILE_COUNT", _PROFILE_INDEX_COUNT))
        found = []
        for profile_index in range(count):
            info = self._optional(self._nv.nvmlDeviceGetGpuInstanceProfileInfo, handle, profile_index)
            if info is None:
                continue  # not supported on this GPU
            # Two calls, as NVML documents: NULL asks for the count (a profile may have more placements than
            # instances, e.g. the H200's 1g.18gb+me: 1 instance, 7 placements), then the array is filled.
            placed = ctypes.c_uint(0)
            self._call(
                "instance placements",
                self._nv.nvmlDeviceGetGpuInstancePossiblePlacements,
                handle,
                info.id,
                None,
                ctypes.byref(placed),
            )
            array = (self._nv.c_nvmlGpuInstancePlacement_t * max(placed.value, 1))()
            self._call(
                "instance placements",
                self._nv.nvmlDeviceGetGpuInstancePossiblePlacements,
                handle,
                info.id,
                array,
                ctypes.byref(placed),
            )
            placements = tuple((int(array[i].start), int(array[i].size)) for i in range(placed.value))
            found.append(
                NvmlProfile(
                    profile_index=profile_index,
                    nvml_id=int(info.id),
                    name=_text(info.name).removeprefix("MIG "),
                    compute=int(info.sliceCount),
                    sms=int(info.multiprocessorCount),
                    memory_mb=int(info.memorySizeMB),
                    instance_count=int(info.instanceCount),
                    placements=placements,
                )
            )
        return tuple(found)

    def _instance_handles(self, index: int) -> list[tuple[Any, Any]]:
        """(handle, info) of every GPU instance, over every profile."""
        handle = self._handle(index)
        found = []
        for profile in self.profiles(index):
            array = (self._nv.c_nvmlGpuInstance_t * max(profile.instance_count, 1))()
            count = ctypes.c_uint(0)
            self._call(
                "GPU instances",
                self._nv.nvmlDeviceGetGpuInstances,
                handle,
                profile.nvml_id,
                array,
                ctypes.byref(count),
            )
            for i in range(count.value):
                found.append(
                    (array[i], self._call("GPU instance info", self._nv.nvmlGpuInstanceGetInfo, array[i]))
                )
        return found

    def _compute_handles(self, gpu_instance: Any) -> list[tuple[Any, int]]:
        found = []
        for ci_index in range(int(getattr(self._nv, "NVML_COMPUTE_INSTANCE_PROFILE_COUNT", 9))):
            info = self._optional(
                self._nv.nvmlGpuInstanceGetComputeInstanceProfileInfo,
                gpu_instance,
                ci_index,
                self._nv.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
            )
            if info is None:
                continue
            array = (self._nv.c_nvmlComputeInstance_t * max(int(info.instanceCount), 1))()
            count = ctypes.c_uint(0)
            self._call(
                "compute instances",
                self._nv.nvmlGpuInstanceGetComputeInstances,
                gpu_instance,
                info.id,
                array,
                ctypes.byref(count),
            )
            for i in range(count.value):
                ci = self._call("compute instance info", self._nv.nvmlComputeInstanceGetInfo, array[i])
                found.append((array[i], int(ci.id)))
        return found

    def gpu_instances(self, index: int) -> tuple[GpuInstance, ...]:
        if not self.mig_mode(index)[0]:
            return ()
        instances = []
        for gi, info in self._instance_handles(index):
            compute = tuple(sorted(ci_id for _, ci_id in self._compute_handles(gi)))
            instances.append(
                GpuInstance(
                    int(info.id),
                    int(info.profileId),
                    int(info.placement.start),
                    int(info.placement.size),
                    compute,
                )
            )
        return tuple(sorted(instances, key=lambda i: (i.start, i.instance_id)))

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        raw = self._call(
            "running processes", self._nv.nvmlDeviceGetComputeRunningProcesses, self._handle(index)
        )
        return tuple(
            GpuProcess(
                int(p.pid),
                _instance_id(getattr(p, "gpuInstanceId", None)),
                _instance_id(getattr(p, "computeInstanceId", None)),
            )
            for p in raw
        )

    def supported_clocks_mhz(self, index: int) -> dict[int, tuple[int, ...]]:
        handle = self._handle(index)
        memory = self._optional(self._nv.nvmlDeviceGetSupportedMemoryClocks, handle) or []
        return {
            int(mem): tuple(
                sorted(
                    (
                        int(f)
                        for f in self._call(
                            "supported graphics clocks",
                            self._nv.nvmlDeviceGetSupportedGraphicsClocks,
                            handle,
                            mem,
                        )
                    ),
                    reverse=True,
                )
            )
            for mem in memory
        }

    def clocks(self, index: int) -> ClockState:
        handle = self._handle(index)
        nv = self._nv

        def read(function: Callable[..., Any], kind: int) -> int:
            value = self._optional(function, handle, kind)
            return 0 if value is None else int(value)

        return ClockState(
            read(nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_SM),
            read(nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_MEM),
            read(nv.nvmlDeviceGetMaxClockInfo, nv.NVML_CLOCK_SM),
            read(nv.nvmlDeviceGetMaxClockInfo, nv.NVML_CLOCK_MEM),
            read(nv.nvmlDeviceGetDefaultApplicationsClock, nv.NVML_CLOCK_GRAPHICS),
            read(nv.nvmlDeviceGetDefaultApplicationsClock, nv.NVML_CLOCK_MEM),
        )

    def power_limits(self, index: int) -> PowerLimits:
        handle = self._handle(index)
        low, high = self._call(
            "power limit range", self._nv.nvmlDeviceGetPowerManagementLimitConstraints, handle
        )
        default = self._call("default power limit", self._nv.nvmlDeviceGetPowerManagementDefaultLimit, handle)
        enforced = self._call("enforced power limit", self._nv.nvmlDeviceGetEnforcedPowerLimit, handle)
        return PowerLimits(low / 1000.0, high / 1000.0, default / 1000.0, enforced / 1000.0)

    def power_w(self, index: int) -> float:
        return (
            float(self._call("power usage", self._nv.nvmlDeviceGetPowerUsage, self._handle(index))) / 1000.0
        )

    def energy_j(self, index: int) -> float | None:
        value = self._optional(self._nv.nvmlDeviceGetTotalEnergyConsumption, self._handle(index))
        return None if value is None else float(value) / 1000.0  # mJ since the driver loaded

    def privileged(self) -> bool:
        return os.geteuid() == 0

    def close(self) -> None:
        self._optional(self._nv.nvmlShutdown)

    # --- changing (behind --apply) -------------------------------------------------------------------
    def create_gpu_instance(self, index: int, profile_id: int, start: int) -> GpuInstance:
        handle = self._handle(index)
        profile = next((p for p in self.profiles(index) if p.nvml_id == profile_id), None)
        if profile is None:
            raise GpuError(f"GPU {index}: no GPU-instance profile with id {profile_id}")
        placement = self._nv.c_nvmlGpuInstancePlacement_t()
        placement.start, placement.size = start, profile.memory_slots
        gi = self._call(
            "create GPU instance",
            self._nv.nvmlDeviceCreateGpuInstanceWithPlacement,
            handle,
            profile_id,
            ctypes.byref(placement),
        )
        # One compute instance over the whole GPU instance (what `nvidia-smi mig -cgi ... -C` makes).
        full = None
        for ci_index in range(int(getattr(self._nv, "NVML_COMPUTE_INSTANCE_PROFILE_COUNT", 9))):
            info = self._optional(
                self._nv.nvmlGpuInstanceGetComputeInstanceProfileInfo,
                gi,
                ci_index,
                self._nv.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
            )
            if info is not None and int(info.sliceCount) == profile.compute:
                full = info
        if full is None:
            raise GpuError(f"GPU {index}: no compute-instance profile spans a {profile.name} instance")
        self._call("create compute instance", self._nv.nvmlGpuInstanceCreateComputeInstance, gi, full.id)
        info = self._call("GPU instance info", self._nv.nvmlGpuInstanceGetInfo, gi)
        compute = tuple(ci_id for _, ci_id in self._compute_handles(gi))
        return GpuInstance(int(info.id), profile_id, start, profile.memory_slots, compute)

    def destroy_gpu_instance(self, index: int, instance_id: int) -> None:
        for gi, info in self._instance_handles(index):
            if int(info.id) == instance_id:
                for ci, _ in self._compute_handles(gi):
                    self._call("destroy compute instance", self._nv.nvmlComputeInstanceDestroy, ci)
                self._call("destroy GPU instance", self._nv.nvmlGpuInstanceDestroy, gi)
                return
        raise GpuError(f"GPU {index}: no GPU instance with id {instance_id}")

    def set_locked_clocks(self, index: int, sm_mhz: int, mem_mhz: int) -> None:
        handle = self._handle(index)
        self._call("lock memory clock", self._nv.nvmlDeviceSetMemoryLockedClocks, handle, mem_mhz, mem_mhz)
        self._call("lock SM clock", self._nv.nvmlDeviceSetGpuLockedClocks, handle, sm_mhz, sm_mhz)

    def reset_clocks(self, index: int) -> None:
        handle = self._handle(index)
        self._call("reset SM clock", self._nv.nvmlDeviceResetGpuLockedClocks, handle)
        self._call("reset memory clock", self._nv.nvmlDeviceResetMemoryLockedClocks, handle)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _instance_id(value: object) -> int | None:
    if value is None:
        return None
    number = int(value)  # type: ignore[call-overload]
    return None if number == _NOT_AVAILABLE_UINT else number
