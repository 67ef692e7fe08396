"""Which way to run a cluster's GPUs: every setting an operator would otherwise try by hand, one table.

A *setting* is one choice of

* the MIG partitioning of every GPU: each configuration of the GPU's list held all day (``static``), the
  MIG-disabled whole GPU (``no-mig``), the day/night pair of the GPU's roles (``day-night``) or the
  simulate-and-compare planner (``lookahead``);
* the placement of jobs on GPUs (every name in :data:`~wattsched.cluster.placement.PLACEMENTS` but the
  energy-blind baseline ``fewest-jobs``);
* GPU clock levels on or off (only on GPUs whose catalogue entry has a clock table: elsewhere the option
  changes nothing and is not compared);
* server power states on or off (a server turns off after idle slots and back on for work).

Each setting is one :class:`~wattsched.cluster.engine.ClusterSimulation` of the same jobs. The in-GPU
scheduling policy is the partitioner's own (preemptive EDF on the whole GPU, restricted EDF-SS on slices).

**Pruning.** The lookahead simulates the jobs in the system once per candidate configuration at every
decision, which makes one of its runs cost about 50 static runs. It is therefore evaluated in a second stage
only: with the placement of the first stage's recommendation (or, when no setting meets the budget, of the
closest one), with every clocks × power-states choice. The ``rollout`` partitioner is left out: its plans
sample arrivals from a generated daily profile rather than from the trace, and a run costs seconds per GPU.

**Budget.** A setting meets the budget when its share of late jobs is at most ``max_late_share`` and, when
``max_tardiness_s`` is given, no job finishes more than ``max_tardiness_s`` after its deadline. The
recommendation is the lowest-energy setting meeting it (ties: lower late share, lower mean tardiness, fewer
changes from the baseline, grid order). **Pareto.** A setting is on the Pareto front when no other setting has
lower-or-equal energy, late share and mean tardiness with at least one strictly lower.

**Baseline.** What a cluster does with nothing tuned: MIG disabled (whole GPUs), first-fit placement,
default clocks, every server always on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from wattsched.cluster.engine import ClusterSimulation
from wattsched.cluster.placement import PLACEMENTS
from wattsched.cluster.spec import ClusterOptions, ClusterSpec, PowerStates
from wattsched.errors import ConfigError
from wattsched.hardware.mig import NO_MIG, MigGpu
from wattsched.units import JOULES_PER_KWH
from wattsched.workload.job import Job

__all__ = [
    "BASELINE",
    "BASELINE_PLACEMENTS",
    "Advice",
    "Budget",
    "Outcome",
    "Setting",
    "advise",
    "first_stage",
    "lock_clock_mhz",
    "pareto_flags",
    "settings_count",
    "suspend_time_s",
]

#: Partitioners compared in the first stage besides one ``static`` setting per configuration.
FIRST_STAGE_PARTITIONERS = ("no-mig", "day-night")
#: Evaluated in the second stage only (see the module docstring).
SECOND_STAGE_PARTITIONERS = ("lookahead",)
#: Registered placements that are no candidate: the energy-blind load balancer kept for comparison.
BASELINE_PLACEMENTS = frozenset({"fewest-jobs"})


@dataclass(frozen=True)
class Setting:
    """One way to run every GPU of the cluster (see the module docstring)."""

    partitioner: str
    configuration: str | None
    placement: str
    clocks: bool
    power_states: bool

    @property
    def policy(self) -> str:
        """The in-GPU policy: preemptive EDF on a whole GPU, restricted EDF-SS on MIG slices."""
        return "edf-fs" if self.partitioner == "no-mig" else "edf-ss-restricted"

    @property
    def label(self) -> str:
        mig = f"static {self.configuration}" if self.partitioner == "static" else self.partitioner
        return (
            f"{mig}, {self.placement}, clocks {'on' if self.clocks else 'off'}, power states "
            f"{'on' if self.power_states else 'off'}"
        )

    def options(self, power: PowerStates) -> ClusterOptions:
        return ClusterOptions(
            placement=self.placement,
            partitioner=self.partitioner,
            configuration=self.configuration,
            policy=self.policy,
            power_states=replace(power, enabled=self.power_states),
            clocks=self.clocks,
            keep_outcomes=False,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "partitioner": self.partitioner,
            "configuration": self.configuration,
            "placement": self.placement,
            "policy": self.policy,
            "clocks": self.clocks,
            "power_states": self.power_states,
            "label": self.label,
        }


#: No MIG (whole GPUs), first-fit, default clocks, servers always on.
BASELINE = Setting("no-mig", None, "first-fit", False, False)


@dataclass(frozen=True)
class Outcome:
    """What one setting gave on the trace (energy in J, times in s)."""

    setting: Setting
    energy_j: float
    jobs: int
    late_jobs: int
    avg_tardiness_s: float
    max_tardiness_s: float
    repartitions: int
    server_turn_ons: int
    #: ``(SM clock in MHz, seconds GPUs spent there)`` of every level used, fastest first.
    clock_time_s: tuple[tuple[int, float], ...] = ()

    @property
    def energy_kwh(self) -> float:
        return self.energy_j / JOULES_PER_KWH

    @property
    def late_share(self) -> float:
        return self.late_jobs / self.jobs if self.jobs else 0.0

    @property
    def total_tardiness_s(self) -> float:
        return self.avg_tardiness_s * self.jobs

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.setting.to_dict(),
            "energy_j": self.energy_j,
            "energy_kwh": self.energy_kwh,
            "jobs": self.jobs,
            "late_jobs": self.late_jobs,
            "late_share": self.late_share,
            "avg_tardiness_s": self.avg_tardiness_s,
            "total_tardiness_s": self.total_tardiness_s,
            "max_tardiness_s": self.max_tardiness_s,
            "repartitions": self.repartitions,
            "server_turn_ons": self.server_turn_ons,
            "clock_levels_used": len(self.clock_time_s),
            "clock_levels_mhz": [mhz for mhz, _ in self.clock_time_s],
        }


@dataclass(frozen=True)
class Budget:
    """The tardiness an operator accepts (see the module docstring)."""

    max_late_share: float = 0.05
    max_tardiness_s: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.max_late_share) and 0.0 <= self.max_late_share <= 1.0):
            raise ConfigError(f"the largest late share must be in [0, 1], got {self.max_late_share!r}")
        if self.max_tardiness_s is not None and not (
            math.isfinite(self.max_tardiness_s) and self.max_tardiness_s >= 0
        ):
            raise ConfigError(f"the largest tardiness must be >= 0 s, got {self.max_tardiness_s!r}")

    def met_by(self, outcome: Outcome) -> bool:
        if outcome.late_share > self.max_late_share + 1e-12:
            return False
        return self.max_tardiness_s is None or outcome.max_tardiness_s <= self.max_tardiness_s + 1e-9

    def overshoot(self, outcome: Outcome) -> float:
        """How far ``outcome`` is from the budget: the sum of its relative excesses (0 when met)."""
        late = max(outcome.late_share - self.max_late_share, 0.0) / max(self.max_late_share, 0.01)
        if self.max_tardiness_s is None:
            return late
        over = max(outcome.max_tardiness_s - self.max_tardiness_s, 0.0) / max(self.max_tardiness_s, 60.0)
        return late + over

    def to_dict(self) -> dict[str, Any]:
        return {"max_late_share": self.max_late_share, "max_tardiness_s": self.max_tardiness_s}


@dataclass(frozen=True)
class Cell:
    """One simulation to run: a setting on the shared jobs (picklable: the executor may send it to a
    worker process)."""

    setting: Setting
    spec: ClusterSpec
    jobs: tuple[Job, ...]
    horizon_s: float
    power: PowerStates

    @property
    def key(self) -> str:
        return self.setting.label


def evaluate(cell: Cell) -> Outcome:
    """Run one cell's setting (a pure function of the cell)."""
    result = ClusterSimulation(cell.spec, cell.setting.options(cell.power), horizon_s=cell.horizon_s).run(
        cell.jobs
    )
    used = tuple(sorted(((mhz, s) for mhz, s in result.clock_time_s.items() if s > 0), reverse=True))
    return Outcome(
        cell.setting,
        result.energy_j,
        result.jobs,
        result.late_jobs,
        result.avg_tardiness_s,
        result.max_tardiness_s,
        result.repartitions,
        result.server_turn_ons,
        used,
    )


def first_stage(gpu: MigGpu) -> list[Setting]:
    """Every first-stage setting for ``gpu``: each configuration held all day, the whole GPU and day-night,
    × every placement (but :data:`BASELINE_PLACEMENTS`) × clocks (GPUs with a clock table) × power states."""
    mig: list[tuple[str, str | None]] = [
        ("static", str(ident)) for ident in gpu.configuration_ids if ident != NO_MIG
    ]
    mig += [(name, None) for name in FIRST_STAGE_PARTITIONERS]
    clocks = (False, True) if gpu.clocks is not None else (False,)
    return [
        Setting(partitioner, configuration, placement, clock, power)
        for partitioner, configuration in mig
        for placement in PLACEMENTS.available()
        if placement not in BASELINE_PLACEMENTS
        for clock in clocks
        for power in (False, True)
    ]


def second_stage(gpu: MigGpu, placement: str) -> list[Setting]:
    clocks = (False, True) if gpu.clocks is not None else (False,)
    return [
        Setting(name, None, placement, clock, power)
        for name in SECOND_STAGE_PARTITIONERS
        for clock in clocks
        for power in (False, True)
    ]


def pareto_flags(outcomes: Sequence[Outcome]) -> list[bool]:
    """Whether each outcome is non-dominated in (energy, late share, mean tardiness)."""
    points = [(o.energy_j, o.late_share, o.avg_tardiness_s) for o in outcomes]

    def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
        return all(x <= y for x, y in zip(a, b, strict=True)) and a != b

    return [not any(dominates(other, point) for other in points) for point in points]


def _rank(outcome: Outcome) -> tuple[float, float, float, int]:
    """Energy, then late share, mean tardiness, and the fewest changes from the baseline (equal outcomes:
    the simpler setting)."""
    changes = sum(
        getattr(outcome.setting, name) != getattr(BASELINE, name)
        for name in ("partitioner", "configuration", "placement", "clocks", "power_states")
    )
    return outcome.energy_j, outcome.late_share, outcome.avg_tardiness_s, changes


@dataclass(frozen=True)
class Advice:
    """Every outcome (grid order), its Pareto flag, the baseline and the recommendation (or the closest)."""

    outcomes: tuple[Outcome, ...]
    pareto: tuple[bool, ...]
    budget: Budget
    baseline: Outcome
    recommended: Outcome | None
    closest: Outcome
    meets: tuple[bool, ...] = field(default=())


def _recommend(outcomes: Sequence[Outcome], budget: Budget) -> tuple[Outcome | None, Outcome]:
    feasible = [o for o in outcomes if budget.met_by(o)]  # min() keeps the first of equals: grid order
    best = min(feasible, key=_rank) if feasible else None
    closest = best or min(outcomes, key=lambda o: (budget.overshoot(o), *_rank(o)))
    return best, closest


def advise(
    jobs: Sequence[Job],
    spec: ClusterSpec,
    budget: Budget,
    *,
    horizon_s: float,
    power: PowerStates | None = None,
    run: Callable[[Callable[[Cell], Outcome], Sequence[Cell]], Iterator[tuple[int, Outcome]]] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Advice:
    """Evaluate every setting on ``jobs`` (two stages, module docstring) and pick the recommendation.

    ``run(fn, cells)`` yields ``(index, fn(cell))`` in any order (an executor's ``run``; default: one after
    the other here); ``progress`` gets the count of settings evaluated so far. ``power`` holds the power-state
    constants (``enabled`` is the setting's)."""
    models = spec.gpu_models()
    if any(model != models[0] for model in models):
        raise ConfigError("advise compares settings of one GPU model; the cluster mixes several")
    gpu = models[0]
    power = power or PowerStates()
    shared = tuple(jobs)

    def run_all(settings: list[Setting], done: int) -> list[Outcome]:
        cells = [Cell(s, spec, shared, horizon_s, power) for s in settings]
        out: list[Outcome | None] = [None] * len(cells)
        runner = run or (lambda fn, cs: enumerate(map(fn, cs)))
        for count, (index, outcome) in enumerate(runner(evaluate, cells), start=1):
            out[index] = outcome
            if progress is not None:
                progress(done + count)
        return [o for o in out if o is not None]

    first = first_stage(gpu)
    outcomes = run_all(first, 0)
    _, lead = _recommend(outcomes, budget)
    outcomes += run_all(second_stage(gpu, lead.setting.placement), len(first))
    recommended, closest = _recommend(outcomes, budget)
    baseline = next(o for o in outcomes if o.setting == BASELINE)
    return Advice(
        tuple(outcomes),
        tuple(pareto_flags(outcomes)),
        budget,
        baseline,
        recommended,
        closest,
        tuple(budget.met_by(o) for o in outcomes),
    )


def settings_count(gpu: MigGpu) -> int:
    """How many settings :func:`advise` evaluates on ``gpu`` (for a progress bar)."""
    return len(first_stage(gpu)) + len(second_stage(gpu, "first-fit"))


def suspend_time_s(gpu: MigGpu, gpus_per_server: int, power: PowerStates) -> float:
    """The idle time after which a server should be turned off: the engine's own turn-off rule
    (:meth:`PowerStates.idle_slots_for`, from the turn-on energy and the server's idle power) in seconds."""
    idle_w = power.server_idle_w([gpu] * gpus_per_server)
    return power.idle_slots_for(idle_w, gpus_per_server) * power.slot_s


def lock_clock_mhz(outcome: Outcome) -> int | None:
    """The SM clock to lock for ``outcome``'s setting: the level its GPUs spent the most time at (``None``
    without clock levels)."""
    if not outcome.clock_time_s:
        return None
    return max(outcome.clock_time_s, key=lambda level: (level[1], level[0]))[0]
