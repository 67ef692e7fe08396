"""``fake:FILE``: a GPU backend that replays a recorded NVML snapshot (docs/howto/nvml.md).

FILE is what ``wattsched gpu record`` writes, or ``data/hardware/h200/nvml_facts.json`` as it is: one
device's read-outs as a JSON object, or ``{"devices": [object, ...]}`` for several GPUs. Keys the fake reads
(NVML's units: mW, mJ, MHz, bytes): ``name``, ``driver``, ``memory_total_bytes``, ``power_usage_idle_mw``,
``power_limit_constraints_mw``, ``power_limit_enforced_mw``, ``power_limit_default_mw``,
``mig_mode_current_pending``, ``gpu_instance_profiles``, ``supported_graphics_clocks_mhz``, the ``clock_*``
keys, ``multiprocessor_count``, ``energy_counter_mj_start`` (absent or null: a GPU without an energy counter).

Keys only a fake reads (for tests and demonstrations): ``fake_power_w`` (the board power; default
``power_usage_idle_mw``), ``mig_instances`` (``[{"id", "profile_id", "start", "size",
"compute_instance_ids"}]``), ``processes`` (``[{"pid", "gpu_instance_id", "compute_instance_id"}]``) and
``fake_root`` (whether changes are allowed; default false).

The energy counter advances at the board power in real (monotonic) time from ``energy_counter_mj_start``.
Changes (instances, locked clocks, ``set_power_w``) live in memory and never touch the file.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattsched.errors import InputError
from wattsched.hardware.gpu.backend import (
    ClockState,
    GpuError,
    GpuIdentity,
    GpuInstance,
    GpuProcess,
    NvmlProfile,
    PowerLimits,
)

__all__ = ["FakeBackend", "VirtualClock", "load_snapshot", "parse_profiles"]

_MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024


def load_snapshot(path: str | Path) -> list[dict[str, Any]]:
    """The device objects of a snapshot file (one or several), each checked for the keys the fake needs."""
    where = str(path)
    try:
        size = Path(path).stat().st_size
        if size > _MAX_SNAPSHOT_BYTES:
            raise InputError(f"snapshot is {size:,} bytes; at most {_MAX_SNAPSHOT_BYTES:,}", path=where)
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("snapshot not found", path=where) from None
    except IsADirectoryError:
        raise InputError("snapshot is a directory, not a JSON file", path=where) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read snapshot: {exc}", path=where) from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"snapshot is not valid JSON ({exc})", path=where) from None
    devices = data.get("devices", [data]) if isinstance(data, dict) else None
    if not isinstance(devices, list) or not devices or not all(isinstance(d, dict) for d in devices):
        raise InputError('snapshot must be a JSON object (one GPU) or {"devices": [objects]}', path=where)
    for number, device in enumerate(devices):
        _check_device(device, f"{where}: device {number}" if len(devices) > 1 else where)
    return devices


def _number(device: dict[str, Any], key: str, where: str, *, required: bool = True) -> float | None:
    value = device.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InputError(f"key '{key}' must be a finite number >= 0, got {value!r}", path=where)
    return float(value)


def _check_device(device: dict[str, Any], where: str) -> None:
    if not isinstance(device.get("name"), str) or not device["name"]:
        raise InputError("key 'name' (the NVML device name) is missing or not text", path=where)
    for key in ("memory_total_bytes", "power_limit_enforced_mw"):
        _number(device, key, where)
    if device.get("fake_power_w") is None:
        _number(device, "power_usage_idle_mw", where)
    else:
        _number(device, "fake_power_w", where)
    _number(device, "energy_counter_mj_start", where, required=False)
    limits = device.get("power_limit_constraints_mw")
    if not (
        isinstance(limits, list)
        and len(limits) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in limits)
    ):
        raise InputError("key 'power_limit_constraints_mw' must be [min, max]", path=where)
    mode = device.get("mig_mode_current_pending", [0, 0])
    if not (isinstance(mode, list) and len(mode) == 2 and all(v in (0, 1) for v in mode)):
        raise InputError("key 'mig_mode_current_pending' must be [0|1, 0|1]", path=where)
    parse_profiles(device.get("gpu_instance_profiles", {}), where)
    clocks = device.get("supported_graphics_clocks_mhz", {})
    if not isinstance(clocks, dict) or not all(
        isinstance(v, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in v)
        for v in clocks.values()
    ):
        raise InputError(
            "key 'supported_graphics_clocks_mhz' must map memory clocks to lists of MHz", path=where
        )


def parse_profiles(raw: object, where: str) -> tuple[NvmlProfile, ...]:
    """The supported GPU-instance profiles of a snapshot's ``gpu_instance_profiles`` (errors are skipped)."""
    if not isinstance(raw, dict):
        raise InputError("key 'gpu_instance_profiles' must be an object keyed by profile index", path=where)
    profiles = []
    for key, info in raw.items():
        if not isinstance(info, dict):
            raise InputError(f"gpu_instance_profiles['{key}'] must be an object", path=where)
        if "error" in info:
            continue  # NVML said "Not Supported" for this profile index
        try:
            placements = tuple((int(start), int(size)) for start, size in info["placements"])
            profile = NvmlProfile(
                profile_index=int(key),
                nvml_id=int(info["id"]),
                name=str(info["name"]).removeprefix("MIG "),
                compute=int(info["sliceCount"]),
                sms=int(info["multiprocessorCount"]),
                memory_mb=int(info["memorySizeMB"]),
                instance_count=int(info["instanceCount"]),
                placements=placements,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"gpu_instance_profiles['{key}'] is malformed ({type(exc).__name__}: {exc})", path=where
            ) from None
        if not placements or any(start < 0 or size < 1 for start, size in placements):
            raise InputError(
                f"gpu_instance_profiles['{key}'] needs placements [[start >= 0, size >= 1], ...]", path=where
            )
        profiles.append(profile)
    return tuple(profiles)


@dataclass
class VirtualClock:
    """Seconds that pass only when someone sleeps on them."""

    now_s: float

    def now(self) -> float:
        return self.now_s

    def sleep(self, seconds: float) -> None:
        self.now_s += max(seconds, 0.0)


@dataclass
class _FakeDevice:
    """The mutable state of one replayed GPU."""

    facts: dict[str, Any]
    profiles: tuple[NvmlProfile, ...]
    instances: dict[int, GpuInstance]
    processes: tuple[GpuProcess, ...]
    power_w: float
    energy_mj: float | None
    since_s: float
    locked: tuple[int, int] | None = None
    next_id: int = field(default=1)


class FakeBackend:
    """Replays a snapshot file; ``clock`` (seconds) drives the energy counter.

    By default the counter runs on the wall clock from the file's modification time, so that every process
    replaying the same file reads one counter, as every process on a machine reads one GPU's. An injected
    ``clock`` (tests) starts the counter at construction instead.
    """

    def __init__(self, path: str | Path, *, clock: Callable[[], float] | None = None) -> None:
        self.name = f"fake:{path}"
        self.path = str(path)
        self._clock = clock or time.time
        devices = load_snapshot(path)
        self._root = bool(devices[0].get("fake_root", False))
        self._devices = [self._device(facts) for facts in devices]
        if clock is None:
            anchor_s = min(Path(path).stat().st_mtime, self._clock())
            for device in self._devices:
                device.since_s = anchor_s

    def _device(self, facts: dict[str, Any]) -> _FakeDevice:
        power_w = facts.get("fake_power_w")
        if power_w is None:
            power_w = facts["power_usage_idle_mw"] / 1000.0
        instances = {}
        try:
            for raw in facts.get("mig_instances", []):
                instance = GpuInstance(
                    int(raw["id"]),
                    int(raw["profile_id"]),
                    int(raw["start"]),
                    int(raw["size"]),
                    tuple(int(c) for c in raw.get("compute_instance_ids", [0])),
                )
                instances[instance.instance_id] = instance
            processes = tuple(
                GpuProcess(int(p["pid"]), p.get("gpu_instance_id"), p.get("compute_instance_id"))
                for p in facts.get("processes", [])
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"malformed mig_instances or processes ({type(exc).__name__}: {exc})", path=self.path
            ) from None
        counter = facts.get("energy_counter_mj_start")
        return _FakeDevice(
            facts=facts,
            profiles=parse_profiles(facts.get("gpu_instance_profiles", {}), self.path),
            instances=instances,
            processes=processes,
            power_w=float(power_w),
            energy_mj=None if counter is None else float(counter),
            since_s=self._clock(),
            next_id=max(instances, default=0) + 1,
        )

    def _at(self, index: int) -> _FakeDevice:
        if isinstance(index, bool) or not 0 <= index < len(self._devices):
            raise GpuError(
                f"no GPU with index {index} in {self.path} "
                f"(it has {len(self._devices)}: 0..{len(self._devices) - 1})"
            )
        return self._devices[index]

    # --- reading -------------------------------------------------------------------------------------
    def device_count(self) -> int:
        return len(self._devices)

    def identity(self, index: int) -> GpuIdentity:
        facts = self._at(index).facts
        capability = facts.get("compute_capability")
        return GpuIdentity(
            index=index,
            name=str(facts["name"]),
            driver=str(facts.get("driver", "unknown")),
            memory_total_bytes=int(facts["memory_total_bytes"]),
            multiprocessor_count=facts.get("multiprocessor_count"),
            architecture=facts.get("architecture"),
            compute_capability=tuple(capability) if isinstance(capability, list) else None,
        )

    def mig_mode(self, index: int) -> tuple[bool, bool]:
        current, pending = self._at(index).facts.get("mig_mode_current_pending", [0, 0])
        return bool(current), bool(pending)

    def profiles(self, index: int) -> tuple[NvmlProfile, ...]:
        return self._at(index).profiles

    def gpu_instances(self, index: int) -> tuple[GpuInstance, ...]:
        return tuple(sorted(self._at(index).instances.values(), key=lambda i: (i.start, i.instance_id)))

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        return self._at(index).processes

    def supported_clocks_mhz(self, index: int) -> dict[int, tuple[int, ...]]:
        raw = self._at(index).facts.get("supported_graphics_clocks_mhz", {})
        return {int(mem): tuple(sorted(graphics, reverse=True)) for mem, graphics in raw.items()}

    def clocks(self, index: int) -> ClockState:
        device = self._at(index)
        facts = device.facts

        def get(key: str) -> int:
            return int(facts.get(key, 0) or 0)

        sm_now, mem_now = device.locked or (get("clock_sm_now_mhz"), get("clock_mem_now_mhz"))
        return ClockState(
            sm_now,
            mem_now,
            get("clock_sm_max_mhz"),
            get("clock_mem_max_mhz"),
            get("clock_sm_default_app_mhz"),
            get("clock_mem_default_app_mhz"),
        )

    def power_limits(self, index: int) -> PowerLimits:
        facts = self._at(index).facts
        low, high = facts["power_limit_constraints_mw"]
        enforced = facts["power_limit_enforced_mw"] / 1000.0
        return PowerLimits(
            low / 1000.0,
            high / 1000.0,
            facts.get("power_limit_default_mw", facts["power_limit_enforced_mw"]) / 1000.0,
            enforced,
        )

    def power_w(self, index: int) -> float:
        return self._at(index).power_w

    def energy_j(self, index: int) -> float | None:
        device = self._at(index)
        if device.energy_mj is None:
            return None
        return (device.energy_mj + device.power_w * (self._clock() - device.since_s) * 1000.0) / 1000.0

    def privileged(self) -> bool:
        return self._root

    def close(self) -> None:
        pass

    # --- replay controls (fake only) -----------------------------------------------------------------
    def facts(self, index: int) -> dict[str, Any]:
        """The snapshot object of GPU ``index`` as read (do not change it)."""
        return self._at(index).facts

    def use_virtual_clock(self) -> VirtualClock:
        """Run the energy counter on a virtual clock from now on; its ``sleep`` advances time at once.

        For replays that only wait (``gpu calibrate`` on the fake): nothing real runs, so nothing needs the
        wall clock.
        """
        start = self._clock()
        for device in self._devices:
            if device.energy_mj is not None:
                device.energy_mj += device.power_w * (start - device.since_s) * 1000.0
        virtual = VirtualClock(0.0)
        for device in self._devices:
            device.since_s = 0.0
        self._clock = virtual.now
        return virtual

    def set_power_w(self, index: int, power_w: float) -> None:
        """Change the replayed board power from now on (the counter keeps what it accumulated)."""
        device = self._at(index)
        now = self._clock()
        if device.energy_mj is not None:
            device.energy_mj += device.power_w * (now - device.since_s) * 1000.0
        device.since_s, device.power_w = now, float(power_w)

    # --- changing (behind --apply) -------------------------------------------------------------------
    def create_gpu_instance(self, index: int, profile_id: int, start: int) -> GpuInstance:
        device = self._at(index)
        if not self.mig_mode(index)[0]:
            raise GpuError(f"GPU {index}: MIG mode is off; cannot create a GPU instance")
        profile = next((p for p in device.profiles if p.nvml_id == profile_id), None)
        if profile is None:
            raise GpuError(f"GPU {index}: no GPU-instance profile with id {profile_id}")
        size = profile.memory_slots
        if (start, size) not in profile.placements:
            raise GpuError(
                f"GPU {index}: {profile.name} cannot be placed at {start} "
                f"(placements {list(profile.placements)})"
            )
        for other in device.instances.values():
            if start < other.start + other.size and other.start < start + size:
                raise GpuError(
                    f"GPU {index}: {profile.name} at {start} overlaps instance {other.instance_id} "
                    f"at {other.start}+{other.size} (NVML: Insufficient Resources)"
                )
        instance = GpuInstance(device.next_id, profile_id, start, size, (0,))
        device.instances[instance.instance_id] = instance
        device.next_id += 1
        return instance

    def destroy_gpu_instance(self, index: int, instance_id: int) -> None:
        device = self._at(index)
        if instance_id not in device.instances:
            raise GpuError(f"GPU {index}: no GPU instance with id {instance_id}")
        if any(p.gpu_instance_id == instance_id for p in device.processes):
            raise GpuError(f"GPU {index}: GPU instance {instance_id} is in use (NVML: In Use)")
        del device.instances[instance_id]

    def set_locked_clocks(self, index: int, sm_mhz: int, mem_mhz: int) -> None:
        device = self._at(index)
        if sm_mhz not in self.supported_clocks_mhz(index).get(mem_mhz, ()):
            raise GpuError(f"GPU {index}: {sm_mhz} MHz at memory {mem_mhz} MHz is not a supported clock pair")
        device.locked = (sm_mhz, mem_mhz)

    def reset_clocks(self, index: int) -> None:
        self._at(index).locked = None
