"""Checkers for MIG plug-ins, shipped like gymnasium's ``check_env``: run them on a new policy or partitioner.

* :func:`check_run` — the invariants of one finished run, recomputed from its per-job records alone (every job
  completes exactly once, no job on two slices at once, no slice runs two jobs at once, busy compute within
  the configuration, energy equal to an independent re-integration of the power model, tardiness, a free
  slice idles only when no job waits);
* :func:`check_not_starved` — a finished simulation left no job waiting forever (jobs waiting, slices free,
  nothing pending): ``simulate`` itself applies this rule and raises its message;
* :func:`check_policy` — an in-configuration policy on small random traces over every configuration of a GPU
  (and ``no-mig``), with and without repartitions, plus its purity on hand-built views (it must not write the
  view) and the validity of its decisions;
* :func:`check_partitioner` — a repartitioning policy over generated days: valid configuration ids, never
  asked during a blackout, deterministic for a seed, and :func:`check_run` on the day.

Each raises :class:`CheckError` with a message naming the plug-in, the case and the broken rule. The test
suite
runs them over every entry of every registry, so a new plug-in is checked on arrival.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise

import numpy as np

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import NO_MIG, Configuration, MigGpu
from wattsched.mig.partition.base import RepartitionPolicy
from wattsched.mig.policies.base import SchedulingPolicy, StarvedJobsError
from wattsched.mig.results import JobRecord, SimResult
from wattsched.mig.simulator import MigSimulation, resolve_policy, simulate
from wattsched.mig.view import Assignment, JobState, SchedulerView, ViewJob, build_view
from wattsched.workload.job import Job, JobKind, Scaling

__all__ = [
    "CheckError",
    "check_not_starved",
    "check_partitioner",
    "check_policy",
    "check_run",
    "random_trace",
]

_REL = 1e-9


class CheckError(AssertionError):
    """A plug-in broke one of the rules its checker tests."""


def _fail(condition: bool, message: str) -> None:
    if not condition:
        raise CheckError(message)


def random_trace(rng: np.random.Generator, gpu: MigGpu, jobs: int = 12) -> list[Job]:
    """A small trace with the ties that break schedulers: integer arrivals (simultaneous events), equal slice
    speeds (capped jobs), zero slack (late by construction) and both job kinds."""
    sizes = gpu.compute_sizes
    families = (
        (Scaling.LINEAR, lambda g: float(g)),
        (Scaling.CAPPED, lambda g: float(min(g, 2))),
        (Scaling.CAPPED, lambda g: float(min(g, 3))),
        (Scaling.SUBLINEAR, lambda g: float(g) ** 0.75),
    )
    out = []
    for i in range(jobs):
        arrival = float(rng.integers(0, 900))
        base = float(rng.integers(1, 600))
        scaling, speedup = families[int(rng.integers(len(families)))]
        durations = tuple(base / speedup(g) for g in sizes)
        largest = durations[-1]
        full = largest / gpu.full_gpu_speedup if scaling == Scaling.LINEAR else largest
        slack = float(rng.choice([0.0, 0.5, 1.0, 1.25, 1.5, 3.0]))
        kind = JobKind.INFERENCE if i % 2 else JobKind.TRAINING
        out.append(Job(f"j{i}", arrival, arrival + slack * largest, kind, scaling, durations, full, sizes))
    return out


def check_run(
    jobs: Sequence[Job],
    result: SimResult,
    *,
    gpu: MigGpu | str | None = None,
    configuration: int | str | Configuration | None = None,
    power_curve: str | None = None,
) -> None:
    """The invariants of a finished run with records (``configuration``: the fixed one, or ``None`` for a run
    with repartitions, which skips the per-slice work-conservation check). Power-cap runs are not covered."""
    gpu = load_gpu(gpu)
    records = result.records
    _fail(records is not None, "the run has no records (simulate(..., record_jobs=True))")
    assert records is not None
    _fail(len(records) == len(jobs) == result.jobs, f"{len(records)} records for {len(jobs)} jobs")
    table = gpu.power.table(power_curve)
    slices: dict[tuple[int | str, int], tuple[int, int]] = {}
    for config in (*gpu.configurations, gpu.full_gpu):
        for spec in config.slices:
            slices[(config.ident, spec.start)] = (spec.compute, spec.duration_index)
    by_slice: dict[tuple[int | str, int], list[tuple[float, float]]] = defaultdict(list)
    changes: list[tuple[float, int]] = []
    total_tardiness = 0.0
    sizes = gpu.compute_sizes
    for job, rec in zip(jobs, records, strict=True):
        where = f"job {job.job_id}"
        _fail(rec.job_id == job.job_id, f"record order: {rec.job_id} where {job.job_id} was expected")
        _fail(
            math.isfinite(rec.completion_s) and rec.completion_s >= job.arrival_s,
            f"{where} completes at {rec.completion_s}, before its arrival or never",
        )
        _fail(
            bool(rec.slices) and rec.start_s == rec.slices[0][0] >= job.arrival_s,
            f"{where} starts before it arrives",
        )
        _fail(
            math.isclose(rec.slices[-1][1], rec.completion_s, rel_tol=_REL, abs_tol=1e-9),
            f"{where}: its last stretch does not end at its completion",
        )
        durations = job.durations_for(sizes)
        work = 0.0
        previous_end = -math.inf
        for start, end, ident, slot in rec.slices:
            _fail(end > start >= previous_end - 1e-9, f"{where} runs on two slices at once at {start}")
            previous_end = end
            key = (ident, slot)
            _fail(key in slices, f"{where} ran on slice @{slot} of configuration {ident}, which has none")
            compute, index = slices[key]
            work += (end - start) / durations[index]
            by_slice[key].append((start, end))
            weight = table.kind_weight[job.kind.value]
            changes += [(start, compute * weight), (end, -compute * weight)]
        _fail(
            math.isclose(work, 1.0, rel_tol=_REL, abs_tol=1e-9), f"{where} did {work:.12f} of its work, not 1"
        )
        total_tardiness += rec.tardiness_s
        _fail(
            math.isclose(rec.tardiness_s, max(0.0, rec.completion_s - rec.deadline_s), abs_tol=1e-8),
            f"{where}: tardiness {rec.tardiness_s} does not match its completion and deadline",
        )
    for key, intervals in by_slice.items():
        intervals.sort()
        for (_, end), (start, _) in pairwise(intervals):
            _fail(start >= end - 1e-9, f"slice @{key[1]} of configuration {key[0]} runs two jobs at {start}")
    _check_energy(result, changes, table.power_w, table.units, table.busy_units, configuration, gpu)
    _fail(
        math.isclose(result.avg_tardiness_s, total_tardiness / len(jobs), rel_tol=_REL, abs_tol=1e-9)
        if jobs
        else result.avg_tardiness_s == 0.0,
        "average tardiness does not match the records",
    )
    if configuration is not None:
        _check_work_conserving(jobs, records, len(gpu.configuration(configuration).slices))


def _check_energy(
    result: SimResult,
    changes: list[tuple[float, int]],
    power_w: Sequence[float],
    units: int,
    busy_units: Callable[[int], int],
    configuration: int | str | Configuration | None,
    gpu: MigGpu,
) -> None:
    """Energy recomputed independently: sweep the busy state over the stretch boundaries."""
    changes.sort()
    energy = 0.0
    state = 0
    last = 0.0
    limit = gpu.configuration(configuration).total_compute if configuration is not None else units
    for time, delta in changes:
        energy += power_w[state] * (time - last)
        state += delta
        last = time
        _fail(
            0 <= busy_units(state) <= limit,
            f"{busy_units(state)} busy compute slices at {time} (limit {limit})",
        )
    energy += power_w[0] * (result.end_s - last)
    _fail(
        math.isclose(result.energy_j, energy, rel_tol=_REL),
        f"energy {result.energy_j} J, re-integrated {energy} J",
    )
    _fail(
        math.isclose(sum(result.busy_time_s), result.end_s, rel_tol=1e-12), "busy time does not sum to end_s"
    )
    _fail(
        all(t == 0.0 for t in result.busy_time_s[limit + 1 :]), "time spent above the configuration's compute"
    )


def _check_work_conserving(jobs: Sequence[Job], records: Sequence[JobRecord], n_slices: int) -> None:
    """A free slice idles only when no job waits: checked at the middle of every elementary interval."""
    ends = (t for r in records for s in r.slices for t in s[:2])
    points = sorted({0.0, *(j.arrival_s for j in jobs), *ends})
    for lo, hi in pairwise(points):
        if hi - lo < 1e-6:
            continue
        mid = (lo + hi) / 2
        running = sum(1 for r in records for s in r.slices if s[0] <= mid < s[1])
        present = sum(1 for j, r in zip(jobs, records, strict=True) if j.arrival_s <= mid < r.completion_s)
        _fail(running <= n_slices, f"{running} jobs run on {n_slices} slices at {mid}")
        _fail(running in (n_slices, present), f"a slice idles at {mid} while {present - running} job(s) wait")


def check_not_starved(sim: MigSimulation) -> None:
    """The rule that a slice idles only while no job waits, at the end of a run: when nothing is pending any
    more (no event, no arrival) no job may still wait while a slice is free, since nothing would ever place
    it. Raises :class:`~wattsched.mig.policies.StarvedJobsError` (``simulate`` applies this rule itself, and
    :func:`check_policy` reports its message with the case)."""
    waiting, free = sim.waiting_without_events()
    if waiting and free:
        label = getattr(sim.policy, "name", type(sim.policy).__name__)
        raise StarvedJobsError(
            f"policy '{label}' left {waiting} job(s) waiting forever: when the run ended at {sim.now_s:g} s, "
            f"{free} slice(s) were free and nothing else was pending (a slice may idle only while no job "
            "waits: assign must place waiting jobs on free slices)"
        )


def check_policy(
    policy: str | SchedulingPolicy,
    *,
    gpus: Iterable[MigGpu | str | None] = (None,),
    traces: int = 6,
    seed: int = 0,
) -> None:
    """Check an in-configuration policy (a registry name or an object); see the module docstring."""
    resolved = resolve_policy(policy)
    label = getattr(resolved, "name", type(resolved).__name__)
    for gpu_name in gpus:
        gpu = load_gpu(gpu_name)
        rng = np.random.default_rng(seed)
        _check_purity(resolved, gpu, rng, label)
        for index in range(traces):
            jobs = random_trace(rng, gpu)
            for config in (*gpu.configuration_ids, NO_MIG):
                case = f"{label} on {gpu.name} cfg {config}, trace {index}"
                try:
                    result = simulate(jobs, config, resolved, gpu=gpu, record_jobs=True)
                    check_run(jobs, result, gpu=gpu, configuration=config)
                except (CheckError, StarvedJobsError) as exc:
                    raise CheckError(f"{case}: {exc}") from None
                again = simulate(jobs, config, resolved, gpu=gpu, record_jobs=True)
                _fail(again == result, f"{case}: two runs of the same trace differ")
            _check_repartitions(resolved, gpu, jobs, rng, f"{label} on {gpu.name}, trace {index}")


def _check_repartitions(
    policy: SchedulingPolicy, gpu: MigGpu, jobs: list[Job], rng: np.random.Generator, case: str
) -> None:
    choices = [*gpu.configuration_ids, NO_MIG]
    for mode in ("blackout", "deadline_shift"):
        sim = MigSimulation(jobs, choices[0], policy, gpu=gpu, record_jobs=True, repartition_mode=mode)
        while sim.advance():
            _fail(not sim.in_blackout, f"{case}: a decision epoch inside a blackout")
            sim.repartition(choices[int(rng.integers(len(choices)))])
        result = sim.result()
        try:
            check_not_starved(sim)
        except StarvedJobsError as exc:
            raise CheckError(f"{case} with repartitions ({mode}): {exc}") from None
        if mode == "deadline_shift":
            # Tardiness counts against the shifted deadlines: check against the records' deadlines.
            jobs_checked = [
                Job(
                    j.job_id,
                    j.arrival_s,
                    r.deadline_s,
                    j.kind,
                    j.scaling,
                    j.durations_s,
                    j.dur_full_s,
                    j.sizes,
                )
                for j, r in zip(jobs, result.records or (), strict=True)
            ]
        else:
            jobs_checked = jobs
            _fail(
                math.isclose(result.blackout_s, gpu.repartition_s * result.repartitions, abs_tol=1e-9),
                f"{case}: blackout time is not repartition_s per repartition",
            )
        try:
            check_run(jobs_checked, result, gpu=gpu)
        except CheckError as exc:
            raise CheckError(f"{case} with repartitions ({mode}): {exc}") from None


def _snapshot(view: SchedulerView) -> tuple[object, ...]:
    return (
        view.now_s,
        tuple(view.running),
        tuple(view.waiting),
        tuple(view.remaining),
        tuple(view.deadline_s),
        tuple(view.finish_s),
        tuple(view.scan_order),
        tuple(view.job_reference_s),
        tuple(tuple(d) for d in view.durations_s),
    )


def _check_purity(policy: SchedulingPolicy, gpu: MigGpu, rng: np.random.Generator, label: str) -> None:
    """On hand-built views: the policy must not write the view and must return a valid decision."""
    for config in gpu.configurations:
        slices = [(s.compute, s.start, s.duration_index) for s in config.slices]
        jobs = []
        free = list(range(len(slices)))
        rng.shuffle(free)
        for i in range(len(slices) + 3):
            durations = tuple(float(rng.integers(10, 500)) for _ in range(gpu.full_gpu_index + 1))
            deadline = float(rng.integers(100, 2000))
            if free and i % 2 == 0:
                slot = int(free.pop())
                jobs.append(
                    ViewJob(deadline, durations, float(rng.uniform(0.1, 1.0)), JobState.RUNNING, slot)
                )
            else:
                jobs.append(ViewJob(deadline, durations, 1.0))
        view = build_view(50.0, slices, jobs, rank=policy)
        before = _snapshot(view)
        decision = policy.assign(view)
        case = f"{label} on {gpu.name} cfg {config.ident} (hand-built view)"
        _fail(_snapshot(view) == before, f"{case}: the policy wrote its view")
        _fail(decision is None or isinstance(decision, Assignment), f"{case}: assign returned {decision!r}")
        if decision is None:
            continue
        _fail(len(decision) == len(slices), f"{case}: {len(decision)} entries for {len(slices)} slices")
        placed = [j for j in decision if j >= 0]
        _fail(len(placed) == len(set(placed)), f"{case}: a job placed on two slices")
        _fail(
            all(view.state(j) in (JobState.WAITING, JobState.RUNNING) for j in placed),
            f"{case}: a job that is neither waiting nor running was placed",
        )
        waiting_left = len(view.waiting) + sum(1 for j in view.running if j >= 0) - len(placed)
        _fail(-1 not in decision or waiting_left == 0, f"{case}: a slice idles while jobs wait")


def check_partitioner(
    partitioner: RepartitionPolicy,
    *,
    gpus: Iterable[MigGpu | str | None] = (None,),
    days: int = 2,
    seed: int = 0,
    hours: float = 6.0,
) -> None:
    """Check a repartitioning policy on ``days`` generated days of ``hours`` (P1's day profile, twice its rate
    so that it has something to do); see the module docstring."""
    from wattsched.mig.partition.runner import run_day
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    label = getattr(partitioner, "name", type(partitioner).__name__)
    spec = WorkloadSpec(profile="alibaba-day", hours=hours, rate_multiplier=2.0)
    for gpu_name in gpus:
        gpu = load_gpu(gpu_name)
        valid = {*gpu.configuration_ids, NO_MIG}
        for day in range(days):
            case = f"{label} on {gpu.name}, day {day}"
            jobs = generate_jobs(spec, np.random.SeedSequence(seed, spawn_key=(day,)))
            guarded = _Guard(partitioner, valid, case)
            run = run_day(jobs, guarded, horizon_s=spec.horizon_s, gpu=gpu, seed=day, record_jobs=True)
            again = run_day(jobs, partitioner, horizon_s=spec.horizon_s, gpu=gpu, seed=day, record_jobs=True)
            _fail(
                again.result == run.result and again.decisions == run.decisions,
                f"{case}: two runs with the same seed differ",
            )
            try:
                check_run(jobs, run.result, gpu=gpu)
            except CheckError as exc:
                raise CheckError(f"{case}: {exc}") from None


class _Guard:
    """Wraps a partitioner: every configuration it returns must be one of the GPU's."""

    def __init__(self, inner: RepartitionPolicy, valid: set[int | str], case: str) -> None:
        self.inner, self.valid, self.case = inner, valid, case
        self.name, self.scheduler = inner.name, inner.scheduler

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        self.inner.reset(gpu, seed)

    def initial_configuration(self) -> int | str:
        choice = self.inner.initial_configuration()
        _fail(choice in self.valid, f"{self.case}: initial configuration {choice!r} is not one of the GPU's")
        return choice

    def decide(self, snapshot: object) -> int | str:
        _fail(not snapshot.in_blackout, f"{self.case}: asked to decide during a blackout")  # type: ignore[attr-defined]
        choice = self.inner.decide(snapshot)  # type: ignore[arg-type]
        _fail(choice in self.valid, f"{self.case}: chose {choice!r}, not one of the GPU's configurations")
        return choice
