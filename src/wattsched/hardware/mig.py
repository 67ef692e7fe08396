"""MIG hardware as data: slice types, configurations and the busy-units power curve.

The facts live in ``hardware/data/*.toml``; :func:`load_profile` validates them. Adding a GPU means adding a
TOML file, never an ``if gpu == ...``.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from wattsched.errors import ConfigError, InputError

__all__ = [
    "COMPUTE_SIZES",
    "FULL_GPU_INDEX",
    "NO_MIG",
    "Configuration",
    "MigProfile",
    "SliceSpec",
    "default_profile",
    "load_profile",
]

#: Compute sizes a job has a duration for, in the order of ``Job.durations_s``.
COMPUTE_SIZES: tuple[int, ...] = (1, 2, 3, 4, 7)
#: Index of the MIG-disabled full-GPU duration in ``Job.durations_s``.
FULL_GPU_INDEX = 5
#: Name of the MIG-disabled "configuration".
NO_MIG = "no-mig"


@dataclass(frozen=True)
class SliceSpec:
    """One slice of a configuration.

    ``duration_index`` selects the job duration that applies on this slice (an index into
    ``Job.durations_s``): 0..4 for g = 1, 2, 3, 4, 7 and 5 for the MIG-disabled GPU.
    """

    name: str
    compute_units: int
    memory_gb: int
    first_slot: int
    duration_index: int


@dataclass(frozen=True)
class Configuration:
    """A partition of the GPU into slices, listed in slot order."""

    ident: int | str
    slices: tuple[SliceSpec, ...]

    @property
    def total_units(self) -> int:
        return sum(s.compute_units for s in self.slices)

    @property
    def mig_enabled(self) -> bool:
        return self.ident != NO_MIG

    @property
    def compute_sizes(self) -> tuple[int, ...]:
        return tuple(s.compute_units for s in self.slices)


@dataclass(frozen=True)
class MigProfile:
    """A MIG-capable GPU: its configurations, power curve and repartition cost."""

    name: str
    total_units: int
    power_w: tuple[float, ...]
    repartition_s: float
    configurations: tuple[Configuration, ...]
    full_gpu: Configuration
    source: str

    def configuration(self, ident: int | str) -> Configuration:
        """The configuration with id ``ident`` (1..12 or ``"no-mig"``)."""
        if ident == NO_MIG:
            return self.full_gpu
        key = ident
        if isinstance(ident, str):
            try:
                key = int(ident)
            except ValueError:
                key = ident
        for config in self.configurations:
            if config.ident == key:
                return config
        valid = [str(c.ident) for c in self.configurations] + [NO_MIG]
        raise ConfigError(f"unknown configuration '{ident}' for {self.name}; valid: {', '.join(valid)}")

    def power(self, busy_units: int) -> float:
        """Board power in watts with ``busy_units`` compute units running jobs."""
        return self.power_w[busy_units]


def _parse_slice(text: str, slice_types: dict[str, dict[str, int]], where: str) -> SliceSpec:
    name, sep, slot = text.partition("@")
    if not sep or name not in slice_types:
        raise InputError(f"bad slice '{text}' (expected '<type>@<slot>' with a known type)", path=where)
    try:
        first_slot = int(slot)
    except ValueError:
        raise InputError(f"bad slot in slice '{text}'", path=where) from None
    units = int(slice_types[name]["compute_units"])
    if units not in COMPUTE_SIZES:
        raise InputError(f"slice type '{name}' has compute size {units}, not one of {COMPUTE_SIZES}",
                         path=where)
    return SliceSpec(name, units, int(slice_types[name]["memory_gb"]), first_slot, COMPUTE_SIZES.index(units))


def _validate_configuration(config: Configuration, total_units: int, where: str) -> None:
    occupied: set[int] = set()
    for spec in config.slices:
        slots = set(range(spec.first_slot, spec.first_slot + spec.compute_units))
        if occupied & slots or min(slots) < 1 or max(slots) > total_units:
            raise InputError(f"configuration {config.ident}: slice {spec.name}@{spec.first_slot} overlaps "
                             f"another slice or leaves slots 1..{total_units}", path=where)
        occupied |= slots
    order = [s.first_slot for s in config.slices]
    if order != sorted(order):
        raise InputError(f"configuration {config.ident}: slices must be listed in slot order", path=where)


def load_profile(path: str | Path | None = None) -> MigProfile:
    """Load and validate a MIG profile TOML; the default is the A100-40GB of P1."""
    if path is None:
        text = resources.files("wattsched.hardware").joinpath("data/a100_40gb_mig.toml").read_text()
        where = "a100_40gb_mig.toml"
    else:
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read MIG profile: {exc}", path=where) from None
    try:
        return _build_profile(tomllib.loads(text), where)
    except InputError:
        raise
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise InputError(f"invalid MIG profile ({type(exc).__name__}: {exc})", path=where) from None


def _build_profile(data: dict[str, Any], where: str) -> MigProfile:
    gpu = data["gpu"]
    total_units = int(gpu["total_units"])
    power = tuple(float(p) for p in gpu["power_w"])
    slice_types = data["slice_types"]
    raw_configs = data["configuration"]
    if total_units < 1:
        raise InputError(f"total_units must be >= 1, got {total_units}", path=where)
    if len(power) != total_units + 1 or not all(math.isfinite(p) and p >= 0 for p in power):
        raise InputError(f"power_w needs {total_units + 1} finite non-negative values (u = 0..{total_units})",
                         path=where)
    repartition_s = float(gpu.get("repartition_s", 4.0))
    if not (math.isfinite(repartition_s) and repartition_s >= 0):
        raise InputError(f"repartition_s must be finite and >= 0, got {repartition_s}", path=where)
    configs = []
    for raw in raw_configs:
        slices = tuple(_parse_slice(str(s), slice_types, where) for s in raw["slices"])
        config = Configuration(int(raw["id"]), slices)
        _validate_configuration(config, total_units, where)
        configs.append(config)
    if len({c.ident for c in configs}) != len(configs):
        raise InputError("duplicate configuration id", path=where)
    full_units = int(data.get("full_gpu", {}).get("compute_units", total_units))
    if not 1 <= full_units <= total_units:
        raise InputError(f"full_gpu compute_units must be in 1..{total_units}, got {full_units}", path=where)
    full = Configuration(NO_MIG, (SliceSpec("full", full_units, 0, 1, FULL_GPU_INDEX),))
    return MigProfile(
        name=str(gpu["name"]),
        total_units=total_units,
        power_w=power,
        repartition_s=repartition_s,
        configurations=tuple(configs),
        full_gpu=full,
        source=str(gpu.get("source", "")),
    )


@cache
def default_profile() -> MigProfile:
    """The A100-40GB profile of P1, loaded once."""
    return load_profile()
