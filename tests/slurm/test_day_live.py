"""Compressed days under ``day-night`` and ``lookahead`` on a real Slurm (the sandbox, one fake A100-40GB)
and the same traces in :func:`wattsched.mig.partition.runner.run_day` with the measured repartition cost of
the live run.

Under ``day-night`` the day is configuration 3 by "night", 4 by "day", the day from 27 s to 63 s of the
controller's clock. Waves of three jobs drawn as in ``test_parity_live.py`` (each on an idle GPU; its
docstring says why) and, across each boundary, one lone job that runs alone over it: its arrival is a decision
epoch before the boundary and its completion the first one after it, on both sides, however late Slurm
launches it, so each repartition is decided at an epoch where the GPU is idle (no job is held, waited for or
requeued) and the simulator's blackout (the median seconds out of service of this run's repartitions) is what
the live run's slices were out of service. Live decisions come later only by launch latency and the poll.

Tolerances. Decisions: the same changes (3 -> 4 -> 3, each done), each started later than the simulator's
by 0 to ``_LATENCY_MAX_S`` (launch latency plus a poll). Tardiness, per job: later by at most
``_LATENCY_MAX_S`` (its end is late by its launch latency), earlier by at most 1 s (Slurm dates an end to
the second). Energy: the GPU's counter from the first pass to the last, less the idle energy of the time the
live run lasts beyond the simulator's end, is at least the simulator's total less 2 % and at most 40 % above
it: every job script runs longer than the model says (the process's start-up and exit, 0.3-1.5 s a job at
busy power, measured in ``test_parity_live.py``), which on 17 jobs of 1-7 s measured +16 % to +30 % in five
runs, more on a loaded host.

``lookahead`` (``test_a_compressed_day_under_lookahead_...``) plans from the jobs present: at each epoch it
simulates them on each candidate configuration and keeps the cheapest (``a·E_dyn + L / N``). It has no clock
of its own (a time-of-day profile and ``window_s`` enter only through ``sampled_days`` > 0, whole sampled
days of minutes-long jobs; left at 0, the plan is the jobs present), so the compressed day is in its jobs:
by "night" they scale linearly, which one 7g (configuration 1) runs on about 40 % less energy than a 3g; by
"day" they are capped at three slices' speed, which two 3g (configuration 5) run side by side on about half
the energy. Waves arrive on an idle GPU, and the plan's choice is the same live as in the simulator because:

- the candidates are 1 and 5, which share no MIG instance: a change destroys every slice, so live every job
  waits it out as in the simulator's blackout (a change that kept a slice would go on running jobs on it live,
  while the simulator stops the whole GPU);
- the controller asks the partitioner before a pass gives jobs slices, so a wave arriving at the pass of a
  change is never released onto the old layout (Slurm could start a job before the hold);
- each change is decided at a wave's arrival, the previous wave over about 9 s before in the simulator (a live
  job starts at most ``_LATENCY_MAX_S`` later):
  the live snapshot is the simulator's at that epoch exactly (the pass's time, to which the simulator dates
  the arrivals, the wave's jobs with all their work and the same deadlines, nothing else; asserted), and the
  plan charges a change the ``repartition_s`` of the options, not the GPU's, so both plans are the same
  computation; each change starts live at the simulator's time to the microsecond;
- at every other epoch (a completion, which live is seen up to a poll late and dated to Slurm's second) the
  two candidates' costs differ by 26 % or more and the choice is to keep: the plan's energy is proportional
  to the work left, so the ratio holds when the work left differs a little, and a late job only gets later
  with a change.

Asserted beside the day-night tolerances (tardiness, energy): the same changes (1 -> 5 -> 1), started at
the simulator's times, the live snapshots at them equal to the simulator's, and each job run once,
unpreempted, on a slice of the simulator's profile, started later than in the simulator by at most
``_LATENCY_MAX_S`` and earlier by at most 1 s (Slurm dates a start to the second; a job waiting for one
slice starts late by the launch latencies of the jobs before it there). The energy ratio measured 1.17-1.25
in four runs; jobs started -0.3 to 4.6 s later than in the simulator, changes 0 s.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.mig import simulate
from wattsched.mig.partition import PARTITIONERS, RepartitionPolicy
from wattsched.mig.partition.base import ConfigId
from wattsched.mig.partition.runner import DayRun, run_day
from wattsched.mig.results import SimSnapshot
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.jobs import engine_job
from wattsched.slurm.repartition import measured_repartition_s
from wattsched.slurm.state import JobRow, StateStore
from wattsched.workload.job import Job, JobKind, Scaling

from .conftest import require_slurm, sandbox_directory

SEED = 20240302
POLICY = "edf-ss-restricted"
DAY_S = (27.0, 63.0)
_DAY_NIGHT: dict[str, object] = {
    "day_configuration": 4,
    "night_configuration": 3,
    "day_start_h": DAY_S[0] / 3600.0,
    "day_end_h": DAY_S[1] / 3600.0,
}
_GPU = load_gpu("a100-40gb")
_LATENCY_MAX_S = 8.0  # a live decision later than the simulator's by more than this is not launch latency


def _wave(rng: np.random.Generator, first: int, configuration: int) -> list[Job]:
    """Three jobs arriving at 0 that end by 8 s on ``configuration`` without preemption."""
    while True:
        jobs = []
        for n in range(3):
            kind = (JobKind.INFERENCE, JobKind.TRAINING)[int(rng.integers(2))]
            scaling = (Scaling.LINEAR, Scaling.SUBLINEAR, Scaling.CAPPED)[int(rng.integers(3))]
            job = engine_job(str(first + n), 0.0, 0.0, kind, scaling, round(float(rng.uniform(0.3, 0.8)), 2))
            slack = float(rng.uniform(1.2, 4.0)) * job.durations_s[1]
            jobs.append(replace(job, deadline_s=round(slack, 1)))
        result = simulate(jobs, configuration, POLICY, gpu=_GPU, record_jobs=True)
        assert result.records is not None
        if all(r.preemptions == 0 for r in result.records) and result.end_s <= 8.0:
            return jobs


def trace(seed: int = SEED) -> list[tuple[float, Job]]:
    """``(arrival offset s, job with deadline relative to its arrival)``: waves and two lone jobs."""
    rng = np.random.default_rng(seed)
    out: list[tuple[float, Job]] = []
    for offset, configuration in ((1.0, 3), (13.0, 3), (25.0, 0), (37.0, 4), (49.0, 4), (61.0, 0), (73.0, 3)):
        if configuration == 0:  # the lone job: 1 s of whole-GPU work, 4 s or more on any slice
            job = engine_job(str(len(out)), 0.0, 0.0, JobKind.TRAINING, Scaling.LINEAR, 1.0)
            out.append((offset, replace(job, deadline_s=60.0)))
        else:
            out += [(offset, job) for job in _wave(rng, len(out), configuration)]
    return out


#: The lookahead's options: the two configurations it compares, the first one's, and the seconds it charges a
#: change in the plan (about what one takes on the sandbox; live and in the simulator alike).
_LOOKAHEAD: dict[str, object] = {"candidates": [1, 5], "initial": 1, "repartition_s": 2.0}


def lookahead_trace() -> list[tuple[float, Job]]:
    """``(arrival offset s, job with deadline relative to its arrival)``: waves on an idle GPU, each over
    within 6 s in the simulator, at most one job of a wave waiting for a slice; by "night" linear jobs, by
    "day" capped ones, some with deadlines they miss."""
    night, day = Scaling.LINEAR, Scaling.CAPPED
    waves = (
        (1.0, night, ((2.0, 30.0), (1.5, 2.5))),
        (13.0, night, ((2.0, 30.0), (1.0, 3.0))),
        (25.0, day, ((3.0, 30.0), (2.5, 30.0))),  # the first day wave: 1 -> 5
        (37.0, day, ((3.0, 2.0), (2.0, 30.0), (1.5, 30.0))),
        (49.0, day, ((3.0, 30.0), (2.5, 2.0))),
        (61.0, night, ((1.5, 30.0),)),  # night again: 5 -> 1
        (73.0, night, ((2.0, 30.0), (1.0, 2.0))),
    )
    out: list[tuple[float, Job]] = []
    for offset, scaling, jobs in waves:
        for work_s, deadline_s in jobs:
            job = engine_job(str(len(out)), 0.0, 0.0, JobKind.TRAINING, scaling, work_s)
            out.append((offset, replace(job, deadline_s=deadline_s)))
    return out


@contextmanager
def _sandbox(configuration: int) -> Iterator[sandbox_module.Sandbox]:
    """A sandbox with one fake A100-40GB in ``configuration`` and spare devices (a node to repartition)."""
    require_slurm()
    directory = sandbox_directory("wattsched-day-")
    try:
        yield sandbox_module.start(directory, gpus=[("a100-40gb", configuration)], spare_devices=True)
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


class _Recorder:
    """A partitioner that asks ``inner`` and keeps each ``(snapshot, choice)``."""

    def __init__(self, inner: RepartitionPolicy) -> None:
        self.inner = inner
        self.name = inner.name
        self.scheduler = inner.scheduler
        self.asked: list[tuple[SimSnapshot, ConfigId]] = []

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        self.inner.reset(gpu, seed)

    def initial_configuration(self) -> ConfigId:
        return self.inner.initial_configuration()

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        choice = self.inner.decide(snapshot)
        self.asked.append((snapshot, choice))
        return choice

    def changes(self) -> list[tuple[SimSnapshot, ConfigId]]:
        return [(s, c) for s, c in self.asked if c != s.configuration]


def _run_live(
    box: sandbox_module.Sandbox,
    tmp_path: Path,
    jobs: list[tuple[float, Job]],
    partitioner: str,
    options: dict[str, object],
) -> tuple[Controller, dict[int, int], dict[int, float], _Recorder]:
    """The trace submitted at its offsets to a controller under ``partitioner`` (poll 0.5 s) until every job
    ended and no repartition is open: the controller, the Slurm id of each trace job, the time each Slurm
    job was seen arriving, and the partitioner's decisions."""
    config_path = sandbox_module.write_controller_config(
        box, tmp_path / "wattsched.toml", {"policy": POLICY}, partitioner=partitioner,
        partitioner_options=options, repartition={"max_attempts": 20},
    )  # fmt: skip
    config_path.write_text(
        config_path.read_text().replace("[slurm]\n", '[slurm]\npoll_s = 0.5\ntime_origin = "start"\n')
    )
    config = load_config(config_path)
    client = box.client()
    controller = Controller(config, client, StateStore(config.state_path))
    model = controller.gpus[0]
    assert model.partitioner is not None and model.partitioner.name == partitioner
    recorder = _Recorder(model.partitioner)  # the one the config made, already reset for the GPU
    model.partitioner = recorder
    program = f"{sys.executable} -m wattsched.slurm.sandbox_job --state {box.fake_gpu_state}"
    ids: dict[int, int] = {}
    seen_s: dict[int, float] = {}
    begin = time.time()
    pending = list(jobs)
    while time.time() - begin < 150.0:
        tick = time.time()
        while pending and pending[0][0] <= tick - begin:
            _, job = pending.pop(0)
            script = tmp_path / f"job{job.job_id}.sh"
            script.write_text(
                f"#!/bin/sh\nexec {program} --work {job.dur_full_s}s --scaling {job.scaling.value}\n"
            )
            script.chmod(0o755)
            note = (
                f"wattsched: work={job.dur_full_s}s deadline=+{job.deadline_s}s kind={job.kind.value} "
                f"scaling={job.scaling.value}"
            )
            ids[int(job.job_id)] = client.submit(script, comment=note, output=f"{script}.out")
        report = controller.run_once()
        for job_id in report.arrived:
            seen_s[job_id] = report.time_s
        entries = controller.store.repartitions()
        if (
            not pending
            and all(r.phase == "done" for r in controller.store.jobs())
            and len(seen_s) == len(jobs)
            and all(not e.open for e in entries)
        ):
            break
        time.sleep(max(0.0, config.poll_s - (time.time() - tick)))
    else:
        raise AssertionError(f"the day did not finish in 150 s: {controller.store.repartitions()}")
    return controller, ids, seen_s, recorder


def _simulate(
    controller: Controller,
    jobs: list[tuple[float, Job]],
    ids: dict[int, int],
    seen_s: dict[int, float],
    partitioner: RepartitionPolicy,
) -> tuple[DayRun, float]:
    """The trace in :func:`run_day` as the live run saw it (each job arriving when a pass saw it, with the
    deadline Slurm's submit time gave it) on a GPU whose blackout is the live run's measured repartition
    cost; the run and that blackout."""
    origin = controller.origin_s
    rows = {row.job_id: row for row in controller.store.jobs()}
    blackout_s = measured_repartition_s(controller.store.path, _GPU)
    engine_jobs = sorted(
        (
            replace(
                job,
                arrival_s=seen_s[ids[int(job.job_id)]] - origin,
                deadline_s=rows[ids[int(job.job_id)]].deadline_s - origin,  # type: ignore[operator]
            )
            for _, job in jobs
        ),
        key=lambda j: (j.arrival_s, int(j.job_id)),
    )
    run = run_day(
        engine_jobs,
        partitioner,
        horizon_s=None,
        gpu=replace(_GPU, repartition_s=blackout_s),
        record_jobs=True,
    )
    return run, blackout_s


def _check_decisions(controller: Controller, run: DayRun, changes: list[tuple[str, str]]) -> list[float]:
    """The live changes are ``changes``, each done on an idle GPU, and the simulator's are the same, each
    started live later by 0 to ``_LATENCY_MAX_S``; the lags."""
    origin = controller.origin_s
    entries = controller.store.repartitions()
    simulated = [(d.time_s, str(d.configuration)) for d in run.decisions if d.repartitioned]
    lived = [(e.started_s - origin, e.from_config, e.to_config, e.phase) for e in entries]
    assert [(old, new, phase) for _, old, new, phase in lived] == [(old, new, "done") for old, new in changes]
    assert [c for _, c in simulated] == [new for _, new in changes]
    assert all(e.waited == [] and e.requeued == [] for e in entries)  # idle at each decision
    late_s = [t_live - t_sim for (t_live, *_), (t_sim, _) in zip(lived, simulated, strict=True)]
    assert all(0.0 <= s <= _LATENCY_MAX_S for s in late_s), late_s
    return late_s


def _check_jobs(
    box: sandbox_module.Sandbox, controller: Controller, run: DayRun, ids: dict[int, int]
) -> tuple[str, float]:
    """Tardiness per job and in all, and the GPU's energy, against the simulator's (module docstring); a line
    of the figures and the energy ratio."""
    rows: dict[int, JobRow] = {row.job_id: row for row in controller.store.jobs()}
    # Tardiness: a live job ends later than in the simulator by its launch latency (up to
    # _LATENCY_MAX_S) and earlier by at most Slurm's rounding of its end to the second.
    assert run.result.records is not None
    sim_tardiness = {ids[int(r.job_id)]: r.tardiness_s for r in run.result.records}
    excess_s = {j: (rows[j].tardiness_s or 0.0) - t for j, t in sim_tardiness.items()}
    assert all(-1.0 <= s <= _LATENCY_MAX_S for s in excess_s.values()), excess_s
    live_tardiness_s = sum(rows[j].tardiness_s or 0.0 for j in sim_tardiness)
    sim_tardiness_s = sum(sim_tardiness.values())
    assert sim_tardiness_s - len(ids) <= live_tardiness_s <= sim_tardiness_s + len(ids) * _LATENCY_MAX_S
    # Energy: the GPU's counter over the run against the simulator's total, the live run's longer span
    # (its last end is later by launch latency and the poll) charged at the GPU's idle power.
    reading = controller.store.reading(box.node, 0)
    assert reading is not None
    live_energy_j = (reading.counter_mj - reading.first_mj) / 1000.0
    span_s = reading.time_s - controller.origin_s
    extra_j = max(0.0, span_s - run.result.end_s) * _GPU.power.idle_w
    ratio = (live_energy_j - extra_j) / run.result.energy_j
    line = (
        f"tardiness live {live_tardiness_s:.2f} s sim {sim_tardiness_s:.2f} s; energy live "
        f"{live_energy_j:.1f} J over {span_s:.1f} s (idle beyond the simulator's end {extra_j:.1f} J), sim "
        f"{run.result.energy_j:.1f} J over {run.result.end_s:.1f} s; ratio {ratio:.3f}; phases "
        f"{[e.phase_s for e in controller.store.repartitions()]}"
    )
    return line, ratio


def _check_starts(controller: Controller, run: DayRun, ids: dict[int, int]) -> list[float]:
    """Each job ran once, unpreempted, on a slice of the simulator's profile, and started later than in the
    simulator by at most ``_LATENCY_MAX_S`` (launch latency, the poll) and earlier by at most 1 s (Slurm dates
    a start to the second); the lags."""
    rows = {row.job_id: row for row in controller.store.jobs()}
    assert run.result.records is not None
    lags = []
    for record in run.result.records:
        row = rows[ids[int(record.job_id)]]
        (segment,) = record.slices
        _, _, configuration, start = segment
        placed = next(s for s in _GPU.configuration(configuration).slices if s.start == start)
        assert row.slice is not None and row.start_s is not None and row.preemptions == 0, row
        assert row.slice.split("@")[0] == placed.label.split("@")[0], (row, record)
        lags.append(round(row.start_s - controller.origin_s - record.start_s, 2))
    assert all(-1.0 <= lag <= _LATENCY_MAX_S for lag in lags), lags
    return lags


def test_a_compressed_day_night_day_repartitions_as_the_simulator_does(tmp_path: Path) -> None:
    jobs = trace()
    assert len(jobs) == 17
    with _sandbox(3) as box:
        controller, ids, seen_s, _ = _run_live(box, tmp_path, jobs, "day-night", _DAY_NIGHT)
        run, blackout_s = _simulate(
            controller, jobs, ids, seen_s, PARTITIONERS.make("day-night", **_DAY_NIGHT)
        )
        late_s = _check_decisions(controller, run, [("3", "4"), ("4", "3")])
        line, ratio = _check_jobs(box, controller, run, ids)
    print(f"\nday-night: {len(ids)} jobs; blackout {blackout_s:.2f} s; decisions late by {late_s}; {line}")
    assert 0.98 <= ratio <= 1.4, ratio


def _view(snapshot: SimSnapshot) -> tuple[object, ...]:
    """What the lookahead plans from (times to the microsecond): the time, the configuration, and each job's
    deadline, work left, run times, kind and scaling."""
    jobs = sorted(
        (
            round(j.deadline_s, 6),
            round(j.remaining_fraction, 9),
            tuple(round(d, 9) for d in j.durations_s),
            str(j.kind),
            str(j.scaling),
        )
        for j in snapshot.jobs
    )
    return (round(snapshot.now_s, 6), snapshot.configuration, snapshot.in_blackout, jobs)


def test_a_compressed_day_under_lookahead_repartitions_as_the_simulator_does(tmp_path: Path) -> None:
    jobs = lookahead_trace()
    assert len(jobs) == 14
    with _sandbox(1) as box:
        controller, ids, seen_s, live_plan = _run_live(box, tmp_path, jobs, "lookahead", _LOOKAHEAD)
        sim_plan = _Recorder(PARTITIONERS.make("lookahead", **_LOOKAHEAD))
        run, blackout_s = _simulate(controller, jobs, ids, seen_s, sim_plan)
        late_s = _check_decisions(controller, run, [("1", "5"), ("5", "1")])
        assert late_s == pytest.approx([0.0, 0.0], abs=1e-6)  # decided at the pass the simulator dates it to
        starts_s = _check_starts(controller, run, ids)
        line, ratio = _check_jobs(box, controller, run, ids)
    # Each change was decided on the snapshot the simulator had at that epoch: the plan saw the same.
    live_changes, sim_changes = live_plan.changes(), sim_plan.changes()
    assert [c for _, c in live_changes] == [c for _, c in sim_changes] == [5, 1]
    for (live, _), (sim, _) in zip(live_changes, sim_changes, strict=True):
        assert _view(live) == _view(sim), (live, sim)
        assert all(j.remaining_fraction == 1.0 for j in live.jobs)
    assert [len(s.jobs) for s, _ in live_changes] == [2, 1]  # the wave that arrived, nothing else
    print(
        f"\nlookahead: {len(ids)} jobs; {len(live_plan.asked)} decisions live, {len(sim_plan.asked)} "
        f"simulated; blackout {blackout_s:.2f} s; decisions late by {late_s}; job starts late by {starts_s}; "
        f"{line}"
    )
    assert 0.98 <= ratio <= 1.4, ratio
