"""GPU DVFS hardware as data: the V-f coupling, the scaling intervals and the P2 cluster constants.

All voltages and frequencies are normalised to the GPU's factory default (``papers.md`` §B.2). The facts
live in ``hardware/data/*_dvfs.toml``; :func:`load_dvfs_gpu` validates them. Adding a GPU means adding a
TOML file.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from wattsched.errors import ConfigError, InputError

__all__ = [
    "ClusterConstants",
    "DvfsGpu",
    "HkbuGrid",
    "ScalingInterval",
    "VoltageCoupling",
    "available_dvfs_gpus",
    "default_dvfs_gpu",
    "load_dvfs_gpu",
]

FloatArray = npt.NDArray[np.float64]
_SUFFIX = "_dvfs.toml"


@dataclass(frozen=True)
class VoltageCoupling:
    """``f_core_max = g1(V) = sqrt((V - offset) / scale) + base`` (normalised), and its inverse."""

    offset: float = 0.5
    scale: float = 2.0
    base: float = 0.5

    def f_core_max(self, v: Any) -> Any:
        """Highest stable core frequency at core voltage ``v`` (scalar or array)."""
        return np.sqrt(np.maximum((np.asarray(v, dtype=float) - self.offset) / self.scale, 0.0)) + self.base

    def v_min_for(self, f_core: Any) -> Any:
        """Lowest core voltage that supports ``f_core`` (``g1^-1``, for ``f_core >= base``)."""
        f = np.asarray(f_core, dtype=float)
        return self.scale * np.maximum(f - self.base, 0.0) ** 2 + self.offset


@dataclass(frozen=True)
class ScalingInterval:
    """A DVFS scaling interval: ``V in [v_min, v_max]``, ``f_core in [f_core_min, g1(V)]``, ``f_mem`` bounds.

    The solver keeps ``f_core = g1(V)`` (at fixed ``f_core`` power grows with ``V`` and time does not), so the
    voltage runs over ``[v_low, v_max]`` with ``v_low = max(v_min, g1^-1(f_core_min))``.
    """

    name: str
    v_min: float
    v_max: float
    f_core_min: float
    f_mem_min: float
    f_mem_max: float
    coupling: VoltageCoupling

    def __post_init__(self) -> None:
        if not (0 < self.v_min < self.v_max and 0 < self.f_mem_min <= self.f_mem_max and self.f_core_min > 0):
            raise ConfigError(
                f"interval '{self.name}': bounds must satisfy 0 < v_min < v_max, 0 < f_mem_min <= "
                f"f_mem_max, f_core_min > 0"
            )
        if self.f_core_min < float(self.coupling.f_core_max(self.v_min)) - 1e-12:
            # Below the coupling curve at v_min the optimum need not lie on f_core = g1(V); not modelled.
            raise ConfigError(f"interval '{self.name}': f_core_min {self.f_core_min} is below g1(v_min)")
        if self.f_core_min > self.f_core_max_at_top + 1e-12:
            raise ConfigError(f"interval '{self.name}': f_core_min exceeds g1(v_max)")

    @property
    def v_low(self) -> float:
        """Lowest voltage on the coupling curve that respects ``f_core_min``."""
        return max(self.v_min, float(self.coupling.v_min_for(self.f_core_min)))

    @property
    def f_core_max_at_top(self) -> float:
        """``g1(v_max)``: the fastest core frequency of the interval."""
        return float(self.coupling.f_core_max(self.v_max))

    def with_v_max(self, v_max: float) -> ScalingInterval:
        """A copy with another voltage ceiling (the paper uses 1.2; the authors' code 1.25)."""
        return ScalingInterval(
            self.name, self.v_min, v_max, self.f_core_min, self.f_mem_min, self.f_mem_max, self.coupling
        )


@dataclass(frozen=True)
class HkbuGrid:
    """The authors' voltage grid ``v_min + k * v_step <= v_max`` (reproduction mode of Alg. 1)."""

    v_min: float = 0.5
    v_step: float = 0.05
    v_max: float = 1.25

    def voltages(self) -> FloatArray:
        count = math.floor((self.v_max - self.v_min) / self.v_step + 1e-9) + 1
        return self.v_min + self.v_step * np.arange(count, dtype=float)


@dataclass(frozen=True)
class ClusterConstants:
    """P2 cluster constants in contract units. ``turn_on_j_per_pair`` = Δ (90 W·slot = 5400 J at 60 s)."""

    idle_power_w: float = 37.0
    turn_on_j_per_pair: float = 90.0 * 60.0
    slot_s: float = 60.0
    drs_idle_slots: int = 2
    pairs: int = 2048

    def __post_init__(self) -> None:
        if self.idle_power_w < 0 or self.turn_on_j_per_pair < 0:
            raise ConfigError("idle power and turn-on energy must be >= 0")
        if self.slot_s <= 0:
            raise ConfigError(f"slot_s must be > 0, got {self.slot_s}")
        if self.drs_idle_slots < 0 or self.pairs <= 0:
            raise ConfigError("drs_idle_slots must be >= 0 and pairs > 0")

    @staticmethod
    def rho_for(turn_on_j_per_pair: float, idle_power_w: float, slot_s: float) -> int:
        """The paper's rule ``rho = floor(Δ / (P_idle · slot))``: ρ idle slots cost at most a turn-on."""
        if idle_power_w <= 0:
            raise ConfigError("rho needs a positive idle power")
        return math.floor(turn_on_j_per_pair / (idle_power_w * slot_s) + 1e-12)


@dataclass(frozen=True)
class DvfsGpu:
    """A DVFS GPU: default clocks, coupling, wide and narrow intervals, HKBU grid, cluster constants."""

    name: str
    description: str
    core_clock_mhz: float
    memory_clock_mhz: float
    core_voltage_v: float
    coupling: VoltageCoupling
    wide: ScalingInterval
    narrow: ScalingInterval
    hkbu: HkbuGrid
    cluster: ClusterConstants
    pairs_per_server: tuple[int, ...]
    source: str

    def interval(self, name: str) -> ScalingInterval:
        if name == "wide":
            return self.wide
        if name == "narrow":
            return self.narrow
        raise ConfigError(f"unknown interval '{name}'; valid: narrow, wide")


def _number(table: dict[str, Any], key: str, where: str) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"missing, non-numeric or non-finite '{key}'", path=where)
    return float(value)


def _interval(data: dict[str, Any], name: str, coupling: VoltageCoupling, where: str) -> ScalingInterval:
    table = data.get("interval", {}).get(name)
    if not isinstance(table, dict):
        raise InputError(f"missing [interval.{name}]", path=where)
    keys = ("v_min", "v_max", "f_core_min", "f_mem_min", "f_mem_max")
    v_min, v_max, fc_min, fm_min, fm_max = (_number(table, k, where) for k in keys)
    return ScalingInterval(name, v_min, v_max, fc_min, fm_min, fm_max, coupling)


def _parse(data: dict[str, Any], where: str) -> DvfsGpu:
    gpu, coup, grid, clus = (data.get(k, {}) for k in ("gpu", "coupling", "hkbu", "cluster"))
    coupling = VoltageCoupling(*(_number(coup, k, where) for k in ("offset", "scale", "base")))
    slot_s = _number(clus, "slot_s", where)
    cluster = ClusterConstants(
        idle_power_w=_number(clus, "idle_power_w", where),
        turn_on_j_per_pair=_number(clus, "turn_on_w_slot_per_pair", where) * slot_s,
        slot_s=slot_s,
        drs_idle_slots=int(_number(clus, "drs_idle_slots", where)),
        pairs=int(_number(clus, "pairs", where)),
    )
    return DvfsGpu(
        name=str(gpu.get("name", "")),
        description=str(gpu.get("description", "")),
        core_clock_mhz=_number(gpu, "core_clock_mhz", where),
        memory_clock_mhz=_number(gpu, "memory_clock_mhz", where),
        core_voltage_v=_number(gpu, "core_voltage_v", where),
        coupling=coupling,
        wide=_interval(data, "wide", coupling, where),
        narrow=_interval(data, "narrow", coupling, where),
        hkbu=HkbuGrid(*(_number(grid, k, where) for k in ("v_min", "v_step", "v_max"))),
        cluster=cluster,
        pairs_per_server=tuple(int(x) for x in clus.get("pairs_per_server", [1])),
        source=str(gpu.get("source", "")),
    )


def available_dvfs_gpus() -> list[str]:
    """Names of the packaged DVFS GPU files (``<name>_dvfs.toml``)."""
    folder = resources.files("wattsched.hardware") / "data"
    return sorted(p.name[: -len(_SUFFIX)] for p in folder.iterdir() if p.name.endswith(_SUFFIX))


@cache
def _load_packaged(name: str) -> DvfsGpu:
    resource = resources.files("wattsched.hardware") / "data" / f"{name}{_SUFFIX}"
    return _parse(tomllib.loads(resource.read_text(encoding="utf-8")), f"{name}{_SUFFIX}")


def load_dvfs_gpu(name_or_path: str | Path = "gtx1080ti") -> DvfsGpu:
    """A packaged GPU by name (see :func:`available_dvfs_gpus`) or a ``*.toml`` file by path."""
    text = str(name_or_path)
    if text.endswith(".toml"):
        path = Path(text)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"invalid TOML: {' '.join(str(exc).split())}", path=str(path)) from None
        except FileNotFoundError:
            raise InputError("file not found", path=str(path)) from None
        except IsADirectoryError:
            raise InputError("is a directory, not a file", path=str(path)) from None
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=str(path)) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from None
        try:
            return _parse(data, str(path))
        except InputError:
            raise
        except (ConfigError, AttributeError, TypeError, ValueError, OverflowError) as exc:
            # a wrong-shaped table (e.g. ``gpu = 5``) or out-of-range values rejected by the dataclasses
            message = " ".join(str(exc).split())
            reason = f"invalid DVFS GPU file: {type(exc).__name__}: {message}"
            raise InputError(reason, path=str(path)) from None
    valid = available_dvfs_gpus()
    if text not in valid:
        raise ConfigError(f"unknown DVFS GPU '{text}'; valid: {', '.join(valid)}")
    return _load_packaged(text)


def default_dvfs_gpu() -> DvfsGpu:
    """The paper's GTX 1080 Ti."""
    return load_dvfs_gpu("gtx1080ti")
