"""GPU DVFS hardware as data: the V-f coupling, the scaling intervals and the P2 cluster constants.

All voltages and frequencies are normalised to the GPU's factory default (docs/concepts/dvfs.md). The facts
live in ``hardware/data/dvfs/*.toml``; :func:`load_dvfs_gpu` (``catalogue.load("dvfs", ...)``) validates them.
Adding a GPU means adding a TOML file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from wattsched.errors import ConfigError
from wattsched.hardware._toml import CatalogueError, Table
from wattsched.hardware.catalogue import available, load

__all__ = [
    "ClusterConstants",
    "DvfsGpu",
    "HkbuGrid",
    "ScalingInterval",
    "VoltageCoupling",
    "available_dvfs_gpus",
    "default_dvfs_gpu",
    "load_dvfs_gpu",
    "parse_dvfs",
]

FloatArray = npt.NDArray[np.float64]


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
    """P2 cluster constants in SI units (s, J, W), from the GPU's catalogue entry (``[cluster]``).

    ``turn_on_j_per_pair`` = Δ (P2: 90 W·slot = 5400 J at 60 s). ``hkbu_*``: the constants written in the
    authors' simulator (idle W per pair, W·slot per server turn-on), used by its reproduction mode."""

    idle_power_w: float
    turn_on_j_per_pair: float
    slot_s: float
    drs_idle_slots: int
    pairs: int
    hkbu_idle_power_w: float
    hkbu_turn_on_w_slot_per_server: float

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


_DVFS_TOP = ("gpu", "coupling", "interval", "hkbu", "cluster")


def parse_dvfs(data: dict[str, Any], where: str) -> DvfsGpu:
    """A :class:`DvfsGpu` from a catalogue entry (``hardware/data/dvfs/*.toml``)."""
    top = Table(data, where)
    top.check_keys(_DVFS_TOP)
    gpu, coup, grid, clus, intervals = (
        top.table(k) for k in ("gpu", "coupling", "hkbu", "cluster", "interval")
    )
    assert gpu and coup and grid and clus and intervals
    gpu.check_keys(("name", "description", "core_clock_mhz", "memory_clock_mhz", "core_voltage_v", "source"))
    coup.check_keys(("offset", "scale", "base", "source"))
    grid.check_keys(("v_min", "v_step", "v_max", "source"))
    clus.check_keys(
        (
            "idle_power_w",
            "turn_on_w_slot_per_pair",
            "slot_s",
            "drs_idle_slots",
            "pairs",
            "pairs_per_server",
            "hkbu_idle_power_w",
            "hkbu_turn_on_w_slot_per_server",
            "source",
        )
    )
    intervals.check_keys(("wide", "narrow"))
    coupling = VoltageCoupling(*(coup.number(k) for k in ("offset", "scale", "base")))
    slot_s = clus.number("slot_s", positive=True)
    try:
        cluster = ClusterConstants(
            idle_power_w=clus.number("idle_power_w", low=0.0),
            turn_on_j_per_pair=clus.number("turn_on_w_slot_per_pair", low=0.0) * slot_s,
            slot_s=slot_s,
            drs_idle_slots=clus.integer("drs_idle_slots", low=0),
            pairs=clus.integer("pairs", low=1),
            hkbu_idle_power_w=clus.number("hkbu_idle_power_w", low=0.0),
            hkbu_turn_on_w_slot_per_server=clus.number("hkbu_turn_on_w_slot_per_server", low=0.0),
        )
        return DvfsGpu(
            name=gpu.string("name"),
            description=str(gpu.data.get("description", "")),
            core_clock_mhz=gpu.number("core_clock_mhz", positive=True),
            memory_clock_mhz=gpu.number("memory_clock_mhz", positive=True),
            core_voltage_v=gpu.number("core_voltage_v", positive=True),
            coupling=coupling,
            wide=_interval(intervals, "wide", coupling),
            narrow=_interval(intervals, "narrow", coupling),
            hkbu=HkbuGrid(*(grid.number(k, positive=True) for k in ("v_min", "v_step", "v_max"))),
            cluster=cluster,
            pairs_per_server=clus.integers("pairs_per_server"),
            source=str(gpu.data.get("source", "")),
        )
    except ConfigError as exc:
        raise CatalogueError(str(exc), path=where) from None


def _interval(intervals: Table, name: str, coupling: VoltageCoupling) -> ScalingInterval:
    table = intervals.table(name)
    assert table is not None
    table.check_keys(("v_min", "v_max", "f_core_min", "f_mem_min", "f_mem_max", "source"))
    keys = ("v_min", "v_max", "f_core_min", "f_mem_min", "f_mem_max")
    v_min, v_max, fc_min, fm_min, fm_max = (table.number(k) for k in keys)
    return ScalingInterval(name, v_min, v_max, fc_min, fm_min, fm_max, coupling)


def available_dvfs_gpus() -> list[str]:
    """Names of the packaged DVFS GPUs (``catalogue.available("dvfs")``)."""
    return available("dvfs")


def load_dvfs_gpu(name_or_path: str | Path = "gtx1080ti") -> DvfsGpu:
    """A packaged GPU by name (see :func:`available_dvfs_gpus`) or a ``*.toml`` file by path
    (``catalogue.load("dvfs", ...)``)."""
    gpu = load("dvfs", name_or_path)
    assert isinstance(gpu, DvfsGpu)
    return gpu


@cache
def default_dvfs_gpu() -> DvfsGpu:
    """The paper's GTX 1080 Ti."""
    return load_dvfs_gpu("gtx1080ti")
