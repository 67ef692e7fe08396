"""The small interface wattsched needs from a GPU, and the typed facts it returns.

Two implementations: :mod:`~wattsched.hardware.gpu.nvml` (the real driver through NVIDIA's official
``nvidia-ml-py`` binding) and :mod:`~wattsched.hardware.gpu.fake` (replays a recorded snapshot, so that every
path runs in CI without a GPU). Units live in names: W, J, MHz, MB; NVML's mW and mJ are converted at the
backend's edge. Only three methods change the GPU (``create_gpu_instance``, ``destroy_gpu_instance``,
``set_locked_clocks`` / ``reset_clocks``); the package calls them only behind an explicit ``--apply``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from wattsched.errors import WattschedError

__all__ = [
    "ClockState",
    "GpuBackend",
    "GpuError",
    "GpuIdentity",
    "GpuInstance",
    "GpuProcess",
    "NvmlProfile",
    "PowerLimits",
]


class GpuError(WattschedError):
    """A GPU operation that failed or was refused (no NVML, unknown index, MIG off, not root, ...)."""


@dataclass(frozen=True)
class GpuIdentity:
    """What identifies one GPU: NVML name, driver, memory and SM count (``None`` where NVML has none)."""

    index: int
    name: str
    driver: str
    memory_total_bytes: int
    multiprocessor_count: int | None
    architecture: int | None = None
    compute_capability: tuple[int, int] | None = None


@dataclass(frozen=True)
class NvmlProfile:
    """One NVML GPU-instance profile (``nvmlDeviceGetGpuInstanceProfileInfoV``).

    ``profile_index`` is NVML's ``NVML_GPU_INSTANCE_PROFILE_*`` enumerator (the argument of the info call);
    ``nvml_id`` is the profile id that creating an instance takes. ``placements`` are ``(start, size)`` in
    memory slots, as ``nvmlDeviceGetGpuInstancePossiblePlacements`` reports them.
    """

    profile_index: int
    nvml_id: int
    name: str
    compute: int
    sms: int
    memory_mb: int
    instance_count: int
    placements: tuple[tuple[int, int], ...]

    @property
    def memory_slots(self) -> int:
        """Memory slots one instance occupies (the size of its placements)."""
        return self.placements[0][1] if self.placements else 0

    @property
    def media(self) -> bool:
        """Whether this is a ``+me`` profile (the slice that owns the media engines)."""
        return self.name.endswith("+me")


@dataclass(frozen=True)
class GpuInstance:
    """A MIG GPU instance that exists on the device, with the ids of its compute instances."""

    instance_id: int
    profile_id: int
    start: int
    size: int
    compute_instance_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on the GPU; the instance ids are ``None`` when MIG is off."""

    pid: int
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


@dataclass(frozen=True)
class PowerLimits:
    """Power limits in watts: the settable range, the default and the one the driver enforces now."""

    min_w: float
    max_w: float
    default_w: float
    enforced_w: float


@dataclass(frozen=True)
class ClockState:
    """Clocks in MHz: now, the maximum, and the default application clocks."""

    sm_now_mhz: int
    mem_now_mhz: int
    sm_max_mhz: int
    mem_max_mhz: int
    sm_default_mhz: int
    mem_default_mhz: int


@runtime_checkable
class GpuBackend(Protocol):
    """Read (and, behind ``--apply``, change) the GPUs of one machine. Indices are NVML's, from 0."""

    #: ``"nvml"`` or ``"fake:FILE"`` (as ``--backend`` takes it).
    name: str

    def device_count(self) -> int: ...
    def identity(self, index: int) -> GpuIdentity: ...
    def mig_mode(self, index: int) -> tuple[bool, bool]:
        """MIG mode (current, pending)."""
        ...

    def profiles(self, index: int) -> tuple[NvmlProfile, ...]: ...
    def gpu_instances(self, index: int) -> tuple[GpuInstance, ...]: ...
    def create_gpu_instance(self, index: int, profile_id: int, start: int) -> GpuInstance:
        """Create a GPU instance at ``start`` and its one full-size compute instance."""
        ...

    def destroy_gpu_instance(self, index: int, instance_id: int) -> None:
        """Destroy a GPU instance after its compute instances."""
        ...

    def processes(self, index: int) -> tuple[GpuProcess, ...]: ...
    def supported_clocks_mhz(self, index: int) -> dict[int, tuple[int, ...]]:
        """Supported graphics clocks (descending) for each supported memory clock."""
        ...

    def clocks(self, index: int) -> ClockState: ...
    def set_locked_clocks(self, index: int, sm_mhz: int, mem_mhz: int) -> None: ...
    def reset_clocks(self, index: int) -> None: ...
    def power_limits(self, index: int) -> PowerLimits: ...
    def power_w(self, index: int) -> float:
        """Board power now in W (NVML's power usage, averaged by the driver)."""
        ...

    def energy_j(self, index: int) -> float | None:
        """The total-energy counter in J since the driver loaded; ``None`` where the GPU has none."""
        ...

    def privileged(self) -> bool:
        """Whether changes may be attempted (root for NVML)."""
        ...

    def close(self) -> None: ...
