"""The P2 cluster: configuration, per-task schedules, and energy accounting (the pair pool is in ``pool``).

Energy (P2's offline and online totals; docs/concepts/dvfs.md): ``run = Σ P_i·t_i``; ``idle = P_idle·(l·Σ
server on-time − Σ busy)`` (every pair of an ON server that is not busy idles, including pairs that never get
a task); ``overhead = turn_ons·l·Δ``. ``total = run + idle + overhead`` in both modes.

Three rules on which P2's text and the authors' simulator (HKBU-HPML/GPU-DVFS-Job-Schedule) differ are
options of :class:`ClusterConfig`; the defaults follow P2's text, except ``next_start``, where both codes
start a queued task at the previous finish:

* ``idle_accounting``: ``continuous`` (busy and on times as they are) or ``whole-slot`` (the authors' code:
  offline every task's time rounded up to whole slots, a server on for its pairs' longest rounded sum;
  online every stretch of back-to-back tasks on a pair counted from its start slot to the slot after its
  last finish, as their per-slot loop does);
* ``initial_placement`` (online, DVFS on): ``pack`` (Alg. 2 + 3 on the batch at T = 0) or ``one-per-pair``
  (the authors' code: every T = 0 task whose setting meets its deadline gets a pair of its own, on servers
  turned on for them, in task order; only the rest are packed);
* ``next_start``: ``previous-finish`` (a task queued on a busy pair starts when the previous one ends) or
  ``next-slot`` (P2's Alg. 4: it starts at the first slot boundary after that finish).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import numpy.typing as npt

from wattsched.errors import ConfigError
from wattsched.hardware.dvfs import ClusterConstants, HkbuGrid, ScalingInterval, default_dvfs_gpu

__all__ = [
    "GROUPINGS",
    "IDLE_ACCOUNTINGS",
    "INITIAL_PLACEMENTS",
    "MAX_PAIRS",
    "NEXT_STARTS",
    "ClusterConfig",
    "DvfsConfig",
    "RunResult",
    "Schedule",
    "account",
    "ceil_slots",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
GROUPINGS: tuple[str, ...] = ("sorted", "on_demand")
IDLE_ACCOUNTINGS: tuple[str, ...] = ("continuous", "whole-slot")
INITIAL_PLACEMENTS: tuple[str, ...] = ("pack", "one-per-pair")
NEXT_STARTS: tuple[str, ...] = ("previous-finish", "next-slot")
#: Bounds of the cluster constants. Pair arrays are allocated for ``pairs`` pairs, so it is capped; the slot
#: bounds keep slot counts of times up to ``model.MAX_TIME_S`` exact in float64 and int64.
MAX_PAIRS = 1_000_000
MIN_SLOT_S = 1e-3
MAX_SLOT_S = 1e9
MAX_DRS_SLOTS = 1_000_000_000
#: Relative slack when rounding a time up to whole slots: float noise just above a boundary stays on it.
_SLOT_RTOL = 1e-9


def ceil_slots(time_s: npt.ArrayLike, slot_s: float) -> FloatArray:
    """``time_s`` rounded up to a whole number of slots (s), ignoring float noise of ``1e-9`` slot."""
    return np.asarray(np.ceil(np.asarray(time_s, dtype=float) / slot_s - _SLOT_RTOL) * slot_s, dtype=float)


def _paper() -> ClusterConstants:
    """The paper's cluster constants: the ``[cluster]`` table of the default DVFS GPU's catalogue entry (idle
    37 W per pair, Δ = 90 W·slot per pair, 60 s slots, ρ = 2, 2048 pairs; docs/concepts/dvfs.md)."""
    return default_dvfs_gpu().cluster


@dataclass(frozen=True)
class ClusterConfig:
    """Cluster constants and the scheduling rules of the module docstring (P2's text by default).

    The paper's constants are idle 37 W per pair and Δ = 90 W·slot per pair; the authors' code used 85 W and
    200 W·slot per server (:func:`wattsched.dvfs.hkbu.hkbu_configs`). ``grouping`` is Alg. 3 (``sorted``)
    or servers filled in opening order (``on_demand``, the authors' code). ``reproduce_hkbu`` adds the last
    details of the authors' code that P2 leaves open: ties between pairs broken in their list order (ON
    servers by index, then servers turned on in the current slot; best fit takes the last of equal loads),
    online best/worst fit testing ``finish + t <= deadline`` without the current time, no round-off slack in
    fit tests, and an online day ending when its last task ends (servers still ON stop counting idle then).
    """

    pairs: int = field(default_factory=lambda: _paper().pairs)
    pairs_per_server: int = 1
    idle_power_w: float = field(default_factory=lambda: _paper().idle_power_w)
    turn_on_j_per_pair: float = field(default_factory=lambda: _paper().turn_on_j_per_pair)
    slot_s: float = field(default_factory=lambda: _paper().slot_s)
    drs_idle_slots: int = field(default_factory=lambda: _paper().drs_idle_slots)
    grouping: str = "sorted"
    allow_overflow: bool = True
    idle_accounting: str = "continuous"
    initial_placement: str = "pack"
    next_start: str = "previous-finish"
    reproduce_hkbu: bool = False

    def __post_init__(self) -> None:
        for name in ("pairs", "pairs_per_server", "drs_idle_slots"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ConfigError(f"{name} must be an integer, got {value!r}")
        if not (1 <= self.pairs <= MAX_PAIRS and 1 <= self.pairs_per_server <= MAX_PAIRS):
            raise ConfigError(
                f"pairs and pairs_per_server must be in [1, {MAX_PAIRS:,}], got {self.pairs}, "
                f"{self.pairs_per_server}"
            )
        for name, valid in (
            ("grouping", GROUPINGS),
            ("idle_accounting", IDLE_ACCOUNTINGS),
            ("initial_placement", INITIAL_PLACEMENTS),
            ("next_start", NEXT_STARTS),
        ):
            if getattr(self, name) not in valid:
                raise ConfigError(f"unknown {name} '{getattr(self, name)}'; valid: {', '.join(valid)}")
        if not (math.isfinite(self.slot_s) and MIN_SLOT_S <= self.slot_s <= MAX_SLOT_S):
            raise ConfigError(f"slot_s must be in [{MIN_SLOT_S:g}, {MAX_SLOT_S:g}] s, got {self.slot_s!r}")
        for name in ("idle_power_w", "turn_on_j_per_pair"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")
        if not 0 <= self.drs_idle_slots <= MAX_DRS_SLOTS:
            raise ConfigError(f"drs_idle_slots must be in [0, {MAX_DRS_SLOTS:,}], got {self.drs_idle_slots}")

    @property
    def servers(self) -> int:
        """Servers in the nominal cluster (``pairs // l``, at least 1)."""
        return max(self.pairs // self.pairs_per_server, 1)


def _wide() -> ScalingInterval:
    return default_dvfs_gpu().wide


@dataclass(frozen=True)
class DvfsConfig:
    """DVFS on/off, θ-readjustment and Alg. 1 options.

    ``reproduce_hkbu`` copies the authors' Alg. 1 (:mod:`wattsched.dvfs.hkbu`): the initial solve ignores the
    deadline and searches the voltages of ``hkbu_grid`` (16 to V = 1.25 for the 1080 Ti; their current code
    has 13, to 1.1, for the 2070 SUPER), keeping the default setting unless a grid point uses less energy;
    the θ re-solve searches 16 voltages to 1.25 for the least energy below the default's with ``T <= W``
    and leaves the task unchanged when there is none; ``t_min`` is taken at V = 1.25.
    """

    enabled: bool = True
    theta: float = 1.0
    interval: ScalingInterval = field(default_factory=_wide)
    method: str = "exact"
    reproduce_hkbu: bool = False
    hkbu_grid: HkbuGrid = field(default_factory=HkbuGrid)

    def __post_init__(self) -> None:
        if not 0.0 < self.theta <= 1.0:
            raise ConfigError(f"theta must be in (0, 1], got {self.theta}")
        if self.method not in ("exact", "hkbu"):
            raise ConfigError(f"unknown Alg. 1 method '{self.method}'; valid: exact, hkbu")

    @property
    def solve_method(self) -> str:
        return "hkbu" if self.reproduce_hkbu else self.method


@dataclass(frozen=True, eq=False)
class Schedule:
    """Per-task placement (arrays in task order), server on-intervals ``(server, on_s, off_s)``, and whether
    it is an offline schedule (every task at T = 0; whole-slot idle accounting differs by mode)."""

    pair: IntArray
    start_s: FloatArray
    end_s: FloatArray
    power_w: FloatArray
    server_of_pair: IntArray
    intervals: tuple[tuple[int, float, float], ...]
    offline: bool = False


@dataclass(frozen=True)
class RunResult:
    """Energy split and counts of one schedule (the keys of ``dvfs run --json``)."""

    energy_total_j: float
    energy_run_j: float
    energy_idle_j: float
    energy_overhead_j: float
    tasks: int
    deadline_misses: int
    pairs_used: int
    turn_ons: int
    servers_used: int
    readjustments: int
    capacity_exceeded: bool
    end_s: float
    schedule: Schedule | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, float | int | bool]:
        data = asdict(self)
        data.pop("schedule")
        return data


def _whole_slot_busy_s(schedule: Schedule, slot_s: float) -> FloatArray:
    """Per-task busy time in whole slots: offline each task's time rounded up; online each stretch of
    back-to-back tasks on a pair, from the slot it starts in to the slot boundary after its last finish,
    credited to the stretch's last task (the authors' per-slot loop counts a pair busy in exactly those)."""
    start, end, pair = schedule.start_s, schedule.end_s, schedule.pair
    if schedule.offline:
        return ceil_slots(end - start, slot_s)
    order = np.lexsort((start, pair))
    p, s, e = pair[order], start[order], end[order]
    first = np.ones(p.size, dtype=bool)
    first[1:] = (p[1:] != p[:-1]) | (s[1:] != e[:-1])
    last = np.ones(p.size, dtype=bool)
    last[:-1] = first[1:]
    stretch_start = np.maximum.accumulate(np.where(first, np.arange(p.size), 0))
    busy = np.zeros(p.size)
    span = ceil_slots(e[last], slot_s) - np.floor(s[stretch_start[last]] / slot_s + _SLOT_RTOL) * slot_s
    busy[np.flatnonzero(last)] = span
    out = np.zeros(p.size)
    out[order] = busy
    return out


def _on_time_s(schedule: Schedule, busy_s: FloatArray, config: ClusterConfig) -> float:
    """Total server on-time (s). Whole-slot offline: each server is on for its pairs' longest rounded sum."""
    if config.idle_accounting == "whole-slot" and schedule.offline and schedule.pair.size:
        per_pair = np.zeros(max(int(schedule.pair.max()) + 1, schedule.server_of_pair.size))
        np.add.at(per_pair, schedule.pair, busy_s)
        servers = per_pair.size // config.pairs_per_server + 1
        per_server = np.zeros(servers)
        np.maximum.at(per_server, np.arange(per_pair.size) // config.pairs_per_server, per_pair)
        return float(per_server.sum())
    return float(sum(off - on for _, on, off in schedule.intervals))


def account(
    schedule: Schedule, deadline_s: FloatArray, config: ClusterConfig, readjustments: int, keep_schedule: bool
) -> RunResult:
    """Energies and counts of a finished schedule under ``config``'s constants and idle accounting.

    A pure function of the schedule: the same schedule may be accounted under other constants (idle power,
    turn-on energy) or the other ``idle_accounting`` without rescheduling (placement never depends on them).
    """
    busy = schedule.end_s - schedule.start_s
    run = float(np.sum(schedule.power_w * busy))
    counted = _whole_slot_busy_s(schedule, config.slot_s) if config.idle_accounting == "whole-slot" else busy
    on_time = _on_time_s(schedule, counted, config)
    idle = config.idle_power_w * max(config.pairs_per_server * on_time - float(counted.sum()), 0.0)
    turn_ons = len(schedule.intervals)
    overhead = turn_ons * config.pairs_per_server * config.turn_on_j_per_pair
    misses = int(np.sum(schedule.end_s > deadline_s + 1e-9 * np.maximum(np.abs(deadline_s), 1.0)))
    used = np.unique(schedule.pair)
    servers = np.unique(schedule.server_of_pair[used]) if used.size else used
    end = max((off for _, _, off in schedule.intervals), default=0.0)
    return RunResult(
        run + idle + overhead,
        run,
        idle,
        overhead,
        int(schedule.pair.size),
        misses,
        int(used.size),
        turn_ons,
        int(servers.size),
        readjustments,
        bool(used.size and used.max() >= config.pairs),
        float(end),
        schedule if keep_schedule else None,
    )
