"""The P2 cluster: servers of ``l`` CPU-GPU pairs, pair finish times, server on/off, and energy accounting.

Energy (CONTRACT §6, papers.md Eqs. 6–7): ``run = Σ P_i·t_i``; ``idle = P_idle·(l·Σ server on-time − Σ busy)``
(every pair of an ON server that is not busy idles, including pairs that never get a task); ``overhead =
turn_ons·l·Δ``. ``total = run + idle + overhead`` in both modes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import numpy.typing as npt

from wattsched.errors import ConfigError
from wattsched.hardware.dvfs import ScalingInterval, default_dvfs_gpu

__all__ = [
    "GROUPINGS",
    "MAX_PAIRS",
    "ClusterConfig",
    "DvfsConfig",
    "PairPool",
    "RunResult",
    "Schedule",
    "account",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
GROUPINGS: tuple[str, ...] = ("sorted", "on_demand")
#: Bounds of the cluster constants. Pair arrays are allocated for ``pairs`` pairs, so it is capped; the slot
#: bounds keep slot counts of times up to ``model.MAX_TIME_S`` exact in float64 and int64.
MAX_PAIRS = 1_000_000
MIN_SLOT_S = 1e-3
MAX_SLOT_S = 1e9
MAX_DRS_SLOTS = 1_000_000_000


@dataclass(frozen=True)
class ClusterConfig:
    """Cluster constants (paper values by default; the authors' code used idle 85 and 200 per server)."""

    pairs: int = 2048
    pairs_per_server: int = 1
    idle_power_w: float = 37.0
    turn_on_j_per_pair: float = 90.0 * 60.0
    slot_s: float = 60.0
    drs_idle_slots: int = 2
    grouping: str = "sorted"
    allow_overflow: bool = True

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
        if self.grouping not in GROUPINGS:
            raise ConfigError(f"unknown grouping '{self.grouping}'; valid: {', '.join(GROUPINGS)}")
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

    ``reproduce_hkbu`` copies the authors' code: the initial solve ignores the deadline and uses the 16-point
    grid (so a task may miss its deadline), and re-solves use the grid with ``T <= W``.
    """

    enabled: bool = True
    theta: float = 1.0
    interval: ScalingInterval = field(default_factory=_wide)
    method: str = "exact"
    reproduce_hkbu: bool = False

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
    """Per-task placement (arrays in task order) and server on-intervals ``(server, on_s, off_s)``."""

    pair: IntArray
    start_s: FloatArray
    end_s: FloatArray
    power_w: FloatArray
    server_of_pair: IntArray
    intervals: tuple[tuple[int, float, float], ...]


@dataclass(frozen=True)
class RunResult:
    """Energy split and counts of one schedule (CONTRACT §5 JSON keys)."""

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


def account(
    schedule: Schedule, deadline_s: FloatArray, config: ClusterConfig, readjustments: int, keep_schedule: bool
) -> RunResult:
    """Energies and counts of a finished schedule."""
    busy = schedule.end_s - schedule.start_s
    run = float(np.sum(schedule.power_w * busy))
    on_time = sum(off - on for _, on, off in schedule.intervals)
    idle = config.idle_power_w * max(config.pairs_per_server * on_time - float(busy.sum()), 0.0)
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


class PairPool:
    """Pairs with finish times ``mu``, BF/WF loads and server on/off state, as flat arrays.

    ``server_mode=False`` (offline Alg. 2 before Alg. 3 grouping): every opened pair is its own unit and
    stays on. ``server_mode=True``: pairs ``j·l .. j·l+l−1`` form server ``j``; opening turns on a whole
    server (an OFF one of lowest index, or a new one) and DRS turns servers off.
    """

    def __init__(self, capacity_pairs: int, config: ClusterConfig, server_mode: bool) -> None:
        l = config.pairs_per_server if server_mode else 1
        capacity = math.ceil(max(capacity_pairs, 1) / l) * l
        self.l = l
        self.config = config
        self.server_mode = server_mode
        self.mu = np.zeros(capacity)
        self.mu_on = np.full(capacity, np.inf)  # mu where the pair's server is on, else inf
        self.load = np.zeros(capacity)
        self.busy_ceil = np.zeros(capacity)
        self.opened = 0  # pairs (or server slots x l) ever opened
        servers = capacity // l
        self.server_on = np.zeros(servers, dtype=bool)
        self.server_on_s = np.zeros(servers)
        self.server_finish = np.zeros(servers)
        self.intervals: list[tuple[int, float, float]] = []
        self.limit_pairs = config.pairs

    def _grow(self) -> None:
        extra = max(self.mu.size, self.l)
        self.mu = np.concatenate([self.mu, np.zeros(extra)])
        self.mu_on = np.concatenate([self.mu_on, np.full(extra, np.inf)])
        self.load = np.concatenate([self.load, np.zeros(extra)])
        self.busy_ceil = np.concatenate([self.busy_ceil, np.zeros(extra)])
        add = extra // self.l
        self.server_on = np.concatenate([self.server_on, np.zeros(add, dtype=bool)])
        self.server_on_s = np.concatenate([self.server_on_s, np.zeros(add)])
        self.server_finish = np.concatenate([self.server_finish, np.zeros(add)])

    def can_open(self) -> bool:
        if self.config.allow_overflow:
            return True
        off = np.flatnonzero(~self.server_on[: self.opened // self.l])
        return bool(off.size) or self.opened + self.l <= self.limit_pairs

    def open(self, now_s: float) -> int:
        """Turn on a server (or open a pair) at ``now_s``; returns the first pair of it."""
        known = self.opened // self.l
        off = np.flatnonzero(~self.server_on[:known]) if self.server_mode else np.zeros(0, np.int64)
        if off.size:
            server = int(off[0])
        else:
            server = known
            if (server + 1) * self.l > self.mu.size:
                self._grow()
            self.opened += self.l
        first = server * self.l
        self.server_on[server] = True
        self.server_on_s[server] = now_s
        self.server_finish[server] = max(self.server_finish[server], now_s)
        self.mu_on[first : first + self.l] = self.mu[first : first + self.l]
        return first

    def assign(self, pair: int, start_s: float, time_s: float, deadline_s: float) -> None:
        end = start_s + time_s
        self.mu[pair] = end
        self.mu_on[pair] = end
        server = pair // self.l
        if end > self.server_finish[server]:
            self.server_finish[server] = end
        slot = self.config.slot_s
        self.busy_ceil[pair] += math.ceil(time_s / slot - 1e-9) * slot
        if deadline_s > 0:
            with np.errstate(over="ignore"):  # a subnormal deadline gives an infinite load: never chosen
                self.load[pair] = max(self.load[pair], self.busy_ceil[pair] / deadline_s)

    def turn_off_idle(self, now_slot: int) -> None:
        """DRS at slot ``now_slot``: a server whose pairs all idled ρ slots goes off at ``ceil(F)+ρ``."""
        slot = self.config.slot_s
        known = self.opened // self.l
        off_slot = np.ceil(self.server_finish[:known] / slot - 1e-9) + self.config.drs_idle_slots
        due = np.flatnonzero(self.server_on[:known] & (off_slot <= now_slot))
        for server in due:
            self._close(int(server), float(off_slot[server]) * slot)

    def _close(self, server: int, off_s: float) -> None:
        self.intervals.append(
            (server, float(self.server_on_s[server]), max(off_s, float(self.server_on_s[server])))
        )
        self.server_on[server] = False
        first = server * self.l
        self.mu_on[first : first + self.l] = np.inf

    def close_all(self, drs: bool) -> None:
        """End of the run: every ON server goes off (after ρ idle slots when ``drs``, else at its finish)."""
        slot = self.config.slot_s
        for server in np.flatnonzero(self.server_on[: self.opened // self.l]):
            finish = float(self.server_finish[server])
            off = (math.ceil(finish / slot - 1e-9) + self.config.drs_idle_slots) * slot if drs else finish
            self._close(int(server), off)
