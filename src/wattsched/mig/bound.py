"""Lower bounds on what any schedule of a day can do on one MIG GPU (docs/concepts/bound.md).

For a trace on one GPU, :func:`lower_bound` gives

* ``energy_j``: no schedule that finishes every job uses less energy (whatever its configurations, their
  changes, its preemptions and its order of jobs);
* ``tardiness_s``: no schedule has a lower average tardiness; when it is 0, zero tardiness is not ruled
  out and ``on_time_energy_j`` bounds the energy of every schedule with zero tardiness (``None`` when it
  is > 0: no such schedule exists).

Both come from one relaxation, a *time-indexed linear programme* solved with HiGHS (SciPy's ``linprog``).
Time is cut at boundaries ``0 = b_0 < b_1 < … < b_K`` (every arrival, deadline and the horizon:
``resolution_s = None``; or a uniform grid of ``resolution_s``), then at steps doubling after the horizon,
and a last interval has no end. The variables: ``x[j, o, k]``, the seconds job ``j`` runs on a slot of
option ``o`` (a compute size, or the whole GPU with MIG disabled) in interval ``k``; ``y[c, k]``, the
seconds of configuration ``c``; ``λ[s, k]``, the seconds the GPU spends in busy state ``s`` (the
simulator's power-table states); the length of each interval after the horizon (the run ends at its last
completion); the work a job has left at each boundary, and its tardiness. Every schedule the simulator can
run at the GPU's default clock is a feasible point of the programme with the schedule's energy and
tardiness, so the programme's optimum is a lower bound; the page derives each constraint. Repartition
blackouts, the one-slot-at-a-time rule inside an interval and the order of work within an interval are
what the relaxation forgets.

Scope: the GPU's default clock and no power cap (a locked clock or a throttling cap changes speeds, and the
bound does not cover it), and the ``blackout`` repartition mode (``deadline_shift`` moves deadlines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import Configuration, MigGpu
from wattsched.hardware.power import PowerTable
from wattsched.units import SECONDS_PER_MINUTE
from wattsched.workload.job import Job, JobKind

__all__ = [
    "MAX_VARIABLES",
    "Bound",
    "auto_resolution",
    "closed_form_energy_j",
    "lower_bound",
]

#: Largest programme solved (variables); a larger trace at the chosen resolution is refused in one line.
MAX_VARIABLES = 2_000_000
#: The bound reported is the programme's optimum lowered by this relative margin (the solver's tolerance),
#: so that rounding inside the solver never makes it exceed the true optimum of the programme.
SAFETY = 1e-6
#: The closed-form bound is lowered by this relative margin: where it is exact (one job alone with MIG off),
#: its floating-point sum and the simulator's may differ in the last bits, and a bound must never exceed a
#: schedule's energy, not even by rounding.
ROUNDING = 1e-9
#: An average tardiness below this (s) counts as zero (the solver's feasibility tolerance).
ZERO_TARDINESS_S = 1e-6
#: ``resolution = "auto"``: time cut at every event for at most this many jobs, else on a grid of
#: :data:`AUTO_GRID_S` seconds (a day of P1's ``paper`` load, ~500 jobs: ~200,000 variables, ~12 s).
AUTO_EVENT_JOBS = 60
AUTO_GRID_S = 900.0
#: The grid of the energy bound ``mig day`` reports beside a day of more than :data:`AUTO_EVENT_JOBS` jobs
#: (~1 s at the ``paper`` load; the energy bound of such a day is the same at 900 s).
DAY_GRID_S = 3600.0


def auto_resolution(jobs: int, grid_s: float = AUTO_GRID_S) -> float | None:
    """The resolution ``auto`` picks for a trace of ``jobs`` jobs (``None``: every event; else ``grid_s``)."""
    return None if jobs <= AUTO_EVENT_JOBS else grid_s


@dataclass(frozen=True)
class Bound:
    """Lower bounds for one trace on one GPU (J, s); see the module docstring."""

    energy_j: float
    #: ``None`` when not asked for.
    tardiness_s: float | None
    #: Lower bound on the energy of a schedule with zero tardiness; ``None`` when none exists (tardiness
    #: bound > 0) or when it was not asked for.
    on_time_energy_j: float | None
    #: The weaker closed form (idle power to the last possible end, plus the cheapest busy watts per slice).
    closed_form_j: float
    method: str
    resolution_s: float | None
    intervals: int
    variables: int
    jobs: int
    solve_s: float
    #: Lower bound on ET ``(a·energy + tardiness in min) / (a + 1)`` of any schedule, ``a`` =
    #: ``et_coefficient`` per J (``None`` when no coefficient was given).
    et: float | None = None
    et_coefficient: float | None = None

    @property
    def on_time_possible(self) -> bool | None:
        """Whether the bound leaves zero tardiness possible (it never proves that it is); ``None``: the
        tardiness bound was not asked for."""
        return None if self.tardiness_s is None else self.tardiness_s == 0.0

    def row(self) -> dict[str, float | int | str | bool | None]:
        """JSON-ready fields (``mig bound --json``)."""
        return {
            "bound_energy_j": self.energy_j,
            "bound_tardiness_s": self.tardiness_s,
            "on_time_possible": self.on_time_possible,
            "bound_on_time_energy_j": self.on_time_energy_j,
            "bound_et": self.et,
            "et_coefficient_per_j": self.et_coefficient,
            "closed_form_energy_j": self.closed_form_j,
            "method": self.method,
            "resolution_s": self.resolution_s,
            "intervals": self.intervals,
            "variables": self.variables,
            "jobs": self.jobs,
            "solve_s": self.solve_s,
        }


@dataclass(frozen=True)
class _Option:
    """A kind of slot a job can run on: ``units`` compute slices, durations at column ``column``."""

    units: int
    column: int


def _power_table(gpu: MigGpu, power_curve: str | None) -> PowerTable:
    table = gpu.power.table(power_curve)
    if not table.power_w or not math.isfinite(table.power_w[0]):
        raise ConfigError(f"{gpu.name} has no power curve to bound energy with")
    return table


def _states(table: PowerTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reachable busy states: watts, busy inference slices, busy training slices (all slices in the first
    column when power does not depend on the job kind)."""
    watts, inference, training = [], [], []
    width = table.units + 1
    for state, w in enumerate(table.power_w):
        if not math.isfinite(w):
            continue
        if table.per_kind:
            u_inf, u_train = state % width, state // width
        else:
            u_inf, u_train = state, 0
        if u_inf + u_train > table.units:
            continue
        watts.append(w)
        inference.append(u_inf)
        training.append(u_train)
    return np.array(watts), np.array(inference, dtype=float), np.array(training, dtype=float)


def _configurations(gpu: MigGpu, configurations: Sequence[int | str] | None) -> list[Configuration]:
    if configurations is None:
        return [*gpu.configurations, gpu.full_gpu]
    if not configurations:
        raise ConfigError("the bound needs at least one configuration")
    return [gpu.configuration(c) for c in configurations]


def closed_form_energy_j(
    jobs: Sequence[Job],
    gpu: MigGpu | str | None = None,
    horizon_s: float | None = None,
    *,
    configurations: Sequence[int | str] | None = None,
    power_curve: str | None = None,
) -> float:
    """The closed-form bound: ``P(0) · max(horizon, a_j + fastest_j)`` plus, per job, the cheapest
    ``σ · g · dur_g`` over the slots it can run on, ``σ`` = the least busy watts above idle per busy slice of
    any state (docs/concepts/bound.md)."""
    resolved = load_gpu(gpu)
    table = _power_table(resolved, power_curve)
    watts, inference, training = _states(table)
    busy = inference + training
    idle = float(table.power_w[0])
    sigma = float(np.min((watts[busy > 0] - idle) / busy[busy > 0])) if (busy > 0).any() else 0.0
    options = _options(_configurations(resolved, configurations))
    sizes = resolved.compute_sizes
    horizon = _horizon(jobs, horizon_s)
    end = horizon
    busy_j = 0.0
    for job in jobs:
        row = job.durations_for(sizes)
        end = max(end, job.arrival_s + min(row[o.column] for o in options))
        busy_j += sigma * min(o.units * row[o.column] for o in options)
    return idle * end + busy_j


def _options(configs: Sequence[Configuration]) -> list[_Option]:
    seen: dict[int, _Option] = {}
    for config in configs:
        for s in config.slices:
            seen.setdefault(s.duration_index, _Option(s.compute, s.duration_index))
    return [seen[k] for k in sorted(seen)]


def _horizon(jobs: Sequence[Job], horizon_s: float | None) -> float:
    if horizon_s is not None:
        if not (math.isfinite(horizon_s) and horizon_s >= 0):
            raise ConfigError(f"horizon_s must be a finite number >= 0, got {horizon_s!r}")
        return float(horizon_s)
    return max((j.arrival_s for j in jobs), default=0.0)


def _boundaries(
    jobs: Sequence[Job], horizon: float, resolution_s: float | None, fastest: np.ndarray
) -> np.ndarray:
    """Interval starts: before the horizon the events (or a grid), after it steps doubling until every job
    could have run one after the other; the last interval has no end."""
    arrivals = np.array([j.arrival_s for j in jobs])
    deadlines = np.array([j.deadline_s for j in jobs])
    if resolution_s is None:
        before = np.concatenate(
            ([0.0, horizon], arrivals[arrivals < horizon], deadlines[deadlines < horizon])
        )
        step = float(np.median(fastest)) if len(jobs) else 1.0
    else:
        before = np.concatenate((np.arange(0.0, horizon, resolution_s), [horizon]))
        step = float(resolution_s)
    start = max(horizon, float(arrivals.max()) if len(jobs) else 0.0)
    late = float(fastest.sum()) if len(jobs) else 0.0
    after = [start]
    while after[-1] < start + late:
        after.append(start + step * (2 ** (len(after) - 1)))
    points = np.concatenate((before, after))
    if resolution_s is None:
        points = np.concatenate((points, arrivals, deadlines[deadlines < after[-1]]))
    return np.unique(points[points >= 0.0])


def _prepare(
    jobs: Sequence[Job],
    gpu: MigGpu,
    horizon_s: float | None,
    resolution_s: float | None,
    configurations: Sequence[int | str] | None,
    power_curve: str | None,
    max_variables: int,
) -> tuple[_Programme | None, float]:
    """The programme (``None`` for no jobs) and the closed form, after every check."""
    table = _power_table(gpu, power_curve)
    configs = _configurations(gpu, configurations)
    horizon = _horizon(jobs, horizon_s)
    closed = closed_form_energy_j(
        jobs, gpu, horizon, configurations=[c.ident for c in configs], power_curve=power_curve
    )
    if resolution_s is not None and not (math.isfinite(resolution_s) and resolution_s > 0):
        raise ConfigError(f"resolution_s must be a number > 0, got {resolution_s!r}")
    if not jobs:
        return None, closed
    programme = _Programme(jobs, gpu, table, configs, _options(configs), horizon, resolution_s)
    if programme.variables > max_variables:
        raise ConfigError(
            f"a bound of {len(jobs)} jobs at resolution "
            f"{'of every event' if resolution_s is None else f'{resolution_s:g} s'} needs "
            f"{programme.variables:,} variables; the limit is {max_variables:,}: give a coarser resolution"
        )
    return programme, closed


def lower_bound(
    jobs: Sequence[Job],
    gpu: MigGpu | str | None = None,
    horizon_s: float | None = None,
    *,
    resolution_s: float | None = None,
    configurations: Sequence[int | str] | None = None,
    power_curve: str | None = None,
    max_variables: int = MAX_VARIABLES,
    et_coefficient: float | None = None,
    on_time: bool = True,
    tardiness: bool = True,
) -> Bound:
    """Lower bounds on the energy and average tardiness of every schedule of ``jobs`` on ``gpu`` (default
    the A100-40GB), from ``0`` to ``max(horizon_s, last completion)`` as the simulator counts energy
    (``horizon_s`` default: the last arrival). ``resolution_s``: ``None`` cuts time at every arrival and
    deadline (the tightest); a number cuts it on a grid (fewer variables, a lower bound). ``configurations``:
    the ids a schedule may use (default: all of the GPU's and ``no-mig``). A programme over ``max_variables``
    is refused (ConfigError naming the trace's size and the limit). ``et_coefficient``: also bound ET with
    that ``a`` per J (one more programme: energy and tardiness traded in one objective, tighter than ET at
    the two separate bounds); ``on_time=False``: skip the on-time energy; ``tardiness=False``: skip the
    tardiness bound (``tardiness_s`` is then ``None``) and the on-time energy with it."""
    import time

    started = time.perf_counter()
    resolved = load_gpu(gpu)
    programme, closed = _prepare(
        jobs, resolved, horizon_s, resolution_s, configurations, power_curve, max_variables
    )
    if et_coefficient is not None and not (math.isfinite(et_coefficient) and et_coefficient >= 0):
        raise ConfigError(f"et_coefficient must be a finite number >= 0, got {et_coefficient!r}")
    closed *= 1.0 - ROUNDING
    if programme is None:
        et = None if et_coefficient is None else et_coefficient * closed / (et_coefficient + 1.0)
        return Bound(
            closed, 0.0, closed, closed, _method(resolution_s), resolution_s, 0, 0, 0, 0.0, et, et_coefficient
        )
    energy = max(programme.solve("energy"), closed)
    late = programme.solve("tardiness") if tardiness else None
    on_time_j: float | None = None
    if late is not None and late <= ZERO_TARDINESS_S:
        late = 0.0
        if on_time:
            on_time_j = max(programme.solve("on-time"), closed)
    et = None
    if et_coefficient is not None:
        separate = (et_coefficient * energy + (late or 0.0) / SECONDS_PER_MINUTE) / (et_coefficient + 1.0)
        et = max(programme.solve("et", et_coefficient), separate)
    return Bound(
        energy,
        late,
        on_time_j,
        closed,
        _method(resolution_s),
        resolution_s,
        programme.intervals,
        programme.variables,
        len(jobs),
        time.perf_counter() - started,
        et,
        et_coefficient,
    )


def _method(resolution_s: float | None) -> str:
    cut = "every arrival and deadline" if resolution_s is None else f"a {resolution_s:g} s grid"
    return f"time-indexed LP relaxation (HiGHS), time cut at {cut}"


class _Matrix:
    """Rows of one constraint matrix, gathered as coordinate triplets."""

    def __init__(self) -> None:
        self.rows = 0
        self._r: list[np.ndarray] = []
        self._c: list[np.ndarray] = []
        self._v: list[np.ndarray] = []
        self._b: list[np.ndarray] = []

    def block(self, count: int, rhs: np.ndarray | float) -> int:
        """``count`` new rows with right-hand side ``rhs``; returns the first row's index."""
        start = self.rows
        self.rows += count
        self._b.append(np.broadcast_to(np.asarray(rhs, dtype=float), (count,)).copy())
        return start

    def put(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray | float) -> None:
        self._r.append(np.asarray(rows))
        self._c.append(np.asarray(cols))
        self._v.append(np.broadcast_to(np.asarray(vals, dtype=float), np.shape(rows)).copy())

    def build(self, columns: int) -> tuple[sparse.csr_matrix, np.ndarray]:
        data = (np.concatenate(self._v), (np.concatenate(self._r), np.concatenate(self._c)))
        return sparse.csr_matrix(data, shape=(self.rows, columns)), np.concatenate(self._b)


class _Programme:
    """The programme of one trace. Pairs ``p`` = (job, one of its intervals from its arrival's on), the unit
    every per-job row and variable is indexed by: ``x`` of pair ``p`` on option ``o`` is variable
    ``p·options + o``."""

    def __init__(
        self,
        jobs: Sequence[Job],
        gpu: MigGpu,
        table: PowerTable,
        configs: Sequence[Configuration],
        options: Sequence[_Option],
        horizon: float,
        resolution_s: float | None,
    ) -> None:
        rows = np.array([job.durations_for(gpu.compute_sizes) for job in jobs], dtype=float)
        durations = rows[:, [o.column for o in options]]  # (jobs, options)
        if not np.all(np.isfinite(durations)) or np.any(durations <= 0):
            raise ConfigError("every job needs a positive, finite duration on every slice to be bounded")
        self.n = n = len(jobs)
        self.n_opt = n_opt = len(options)
        self.units = np.array([o.units for o in options], dtype=float)
        self.fastest = durations.min(axis=1)
        self.arrival = np.array([j.arrival_s for j in jobs])
        self.deadline = np.array([j.deadline_s for j in jobs])
        self.b = _boundaries(jobs, horizon, resolution_s, self.fastest)
        self.intervals = n_int = len(self.b)  # interval k = [b_k, b_{k+1}); the last has no end
        ends = np.append(self.b[1:], np.inf)
        self.lengths = ends - self.b
        self.fixed = ends <= horizon  # before the horizon the run lasts the whole interval
        first = np.searchsorted(self.b, self.arrival, side="right") - 1
        per_job = n_int - first
        self.n_pairs = n_pairs = int(per_job.sum())
        pair_start = np.concatenate(([0], np.cumsum(per_job)))
        self.pair_job = pair_job = np.repeat(np.arange(n), per_job)
        self.pair_m = pair_m = np.arange(n_pairs) - pair_start[pair_job]
        self.pair_k = pair_k = first[pair_job] + pair_m
        self.room = ends[pair_k] - np.maximum(self.b[pair_k], self.arrival[pair_job])
        self.x_work = (1.0 / durations[pair_job]).ravel()  # work fraction a second, per x variable
        self.x_units = np.tile(self.units, n_pairs)
        self.watts, u_inf, u_train = _states(table)
        self.kind_units = (u_inf, u_train) if table.per_kind else (u_inf,)
        training = np.array([j.kind is JobKind.TRAINING for j in jobs])
        self.x_kind = np.repeat(training[pair_job], n_opt).astype(int) if table.per_kind else None
        self.slots = np.zeros((len(configs), n_opt))
        column = {o.column: i for i, o in enumerate(options)}
        for c, config in enumerate(configs):
            for s in config.slices:
                self.slots[c, column[s.duration_index]] += 1
        # variables: x, y (configuration × interval), λ (state × interval), ℓ (open intervals), R (pairs), T
        self.y0 = n_pairs * n_opt
        self.lam0 = self.y0 + len(configs) * n_int
        self.open = np.flatnonzero(~self.fixed)
        self.ell = np.full(n_int, -1)
        self.ell[self.open] = self.lam0 + len(self.watts) * n_int + np.arange(len(self.open))
        self.r0 = self.lam0 + len(self.watts) * n_int + len(self.open)
        self.t0 = self.r0 + n_pairs
        self.variables = self.t0 + n

    def _base(self, a_eq: _Matrix, a_ub: _Matrix, tardy: bool) -> None:
        """Every constraint but the tardiness rows; the work rows as a chain of remaining work when
        ``tardy``."""
        n_opt, n_int, n_pairs = self.n_opt, self.intervals, self.n_pairs
        x = np.arange(n_pairs * n_opt)
        x_pair = x // n_opt
        x_opt = x % n_opt
        # (1) the work: Σ x/dur = 1 per job, or per pair w_p + R_{p+1} − R_p = [p is the job's first]
        if tardy:
            row = a_eq.block(n_pairs, (self.pair_m == 0).astype(float))
            a_eq.put(row + x_pair, x, self.x_work)
            later = np.flatnonzero(self.pair_m > 0)
            a_eq.put(row + later, self.r0 + later, -1.0)  # −R_p (remaining at the pair's start)
            a_eq.put(row + later - 1, self.r0 + later, 1.0)  # +R_{p} in the previous pair's row
        else:
            row = a_eq.block(self.n, 1.0)
            a_eq.put(row + self.pair_job[x_pair], x, self.x_work)
        # (2) one slot at a time: a job's seconds in an interval ≤ the interval's from its arrival (≤ ℓ after
        # the horizon)
        fixed_pair = self.fixed[self.pair_k]
        row = a_ub.block(n_pairs, np.where(fixed_pair, self.room, 0.0))
        a_ub.put(row + x_pair, x, 1.0)
        open_pairs = np.flatnonzero(~fixed_pair)
        a_ub.put(row + open_pairs, self.ell[self.pair_k[open_pairs]], -1.0)
        # (3) seconds on option o ≤ the slots of o in the configurations' seconds
        row = a_ub.block(n_int * n_opt, 0.0)
        a_ub.put(row + self.pair_k[x_pair] * n_opt + x_opt, x, 1.0)
        k, c, o = np.nonzero(np.broadcast_to(self.slots[None], (n_int, *self.slots.shape)))
        a_ub.put(row + k * n_opt + o, self.y0 + c * n_int + k, -self.slots[c, o])
        # (4) one configuration at a time: Σ_c y ≤ the interval's length
        n_cfg = self.slots.shape[0]
        row = a_ub.block(n_int, np.where(self.fixed, self.lengths, 0.0))
        ks = np.repeat(np.arange(n_int), n_cfg)
        a_ub.put(row + ks, self.y0 + np.tile(np.arange(n_cfg), n_int) * n_int + ks, 1.0)
        a_ub.put(row + self.open, self.ell[self.open], -1.0)
        # (5) one busy state at a time: Σ_s λ = the interval's length
        n_states = len(self.watts)
        row = a_eq.block(n_int, np.where(self.fixed, self.lengths, 0.0))
        ks = np.repeat(np.arange(n_int), n_states)
        ss = np.tile(np.arange(n_states), n_int)
        lam = self.lam0 + ss * n_int + ks
        a_eq.put(row + ks, lam, 1.0)
        a_eq.put(row + self.open, self.ell[self.open], -1.0)
        # (6) busy slice-seconds of each job kind: the states' Σ u·λ = the jobs' Σ g·x
        for kind, units in enumerate(self.kind_units):
            row = a_eq.block(n_int, 0.0)
            a_eq.put(row + ks, lam, units[ss])
            mine = x if self.x_kind is None else x[self.x_kind == kind]
            a_eq.put(row + self.pair_k[mine // n_opt], mine, -self.x_units[mine])

    def _tardiness(self, a_ub: _Matrix) -> None:
        """T_j ≥ b − d_j + fastest_j·R (b < d_j) and T_j ≥ (b − d_j + fastest_j)·R (b ≥ d_j), at the start
        ``b`` of each of the job's later pairs, ``R`` its work left there (docs/concepts/bound.md)."""
        later = np.flatnonzero(self.pair_m > 0)
        job = self.pair_job[later]
        b = self.b[self.pair_k[later]]
        d, fast = self.deadline[job], self.fastest[job]
        before = b < d
        keep = ~before | (b + fast > d)  # the others never bind (R ≤ 1)
        later, job, b, d, fast, before = (v[keep] for v in (later, job, b, d, fast, before))
        row = a_ub.block(len(later), np.where(before, d - b, 0.0))
        rows = row + np.arange(len(later))
        a_ub.put(rows, self.r0 + later, np.where(before, fast, b - d + fast))
        a_ub.put(rows, self.t0 + job, -1.0)
        # a job runs on one slot at a time, so it ends no earlier than its arrival plus all the seconds it
        # runs: T_j ≥ a_j − d_j + Σ x_j (whatever the grid)
        row = a_ub.block(self.n, self.deadline - self.arrival)
        x = np.arange(self.n_pairs * self.n_opt)
        a_ub.put(row + self.pair_job[x // self.n_opt], x, 1.0)
        a_ub.put(row + np.arange(self.n), self.t0 + np.arange(self.n), -1.0)

    def solve(self, objective: str, et_coefficient: float = 0.0) -> float:
        """``energy`` (J), ``tardiness`` (mean, s), ``on-time`` (J with zero tardiness) or ``et`` (ET with
        ``a = et_coefficient`` per J, tardiness in minutes): the optimum less the safety margin; ``inf``
        where no schedule of that kind exists."""
        tardy = objective != "energy"
        a_eq, a_ub = _Matrix(), _Matrix()
        self._base(a_eq, a_ub, tardy)
        lower = np.zeros(self.variables)
        upper = np.full(self.variables, np.inf)
        upper[self.ell[self.open[:-1]]] = self.lengths[self.open[:-1]]
        if tardy:
            self._tardiness(a_ub)
            upper[self.r0 + np.flatnonzero(self.pair_m == 0)] = 0.0  # no R at an arrival's pair
            lower[self.t0 :] = np.maximum(0.0, self.arrival + self.fastest - self.deadline)
            if objective == "on-time":
                if np.any(lower[self.t0 :] > 0):
                    return math.inf  # a job misses its deadline even alone on its fastest slot
                upper[self.t0 :] = 0.0
        else:
            upper[self.r0 :] = 0.0  # R and T take no part
        cost = np.zeros(self.variables)
        lam = self.lam0 + np.arange(len(self.watts) * self.intervals)
        if objective == "tardiness":
            cost[self.t0 :] = 1.0 / self.n
        elif objective == "et":
            cost[self.t0 :] = 1.0 / (self.n * SECONDS_PER_MINUTE)
            cost[lam] = et_coefficient * np.repeat(self.watts, self.intervals)
        else:
            cost[lam] = np.repeat(self.watts, self.intervals) / 1000.0  # kJ: a well-scaled objective
        matrix_eq, rhs_eq = a_eq.build(self.variables)
        matrix_ub, rhs_ub = a_ub.build(self.variables)
        result = linprog(
            cost,
            A_ub=matrix_ub,
            b_ub=rhs_ub,
            A_eq=matrix_eq,
            b_eq=rhs_eq,
            bounds=np.column_stack([lower, upper]),
            method="highs",
        )
        if result.status == 2:
            return math.inf
        if result.status != 0:
            raise ConfigError(f"the bound's linear programme was not solved: {result.message}")
        value = max(0.0, float(result.fun) * (1.0 - SAFETY))
        if objective == "et":
            return value / (et_coefficient + 1.0)
        return value * (1.0 if objective == "tardiness" else 1000.0)
