"""The Slurm controller: wattsched's policies decide, Slurm runs the jobs.

Each pass (every ``poll_s`` seconds):

1. **Look** at the managed partition's jobs (``squeue``/``scontrol``, through :class:`SlurmApi`).
2. **Tell each GPU's model what happened.** Every GPU has a :class:`~wattsched.mig.MigSimulation` as its model
   of the present, driven by observed events: a new job is *observed arriving* (its annotation parsed; a
   malformed one holds the job with the reason and goes no further), a job Slurm started is *observed
   starting* on the slice it got, an ended job *observed finishing* at its real end, a requeued job *observed
   requeued* with the work it has left. A new job goes to the node and GPU that the ``[scheduling]
   placement`` picks — the data-centre simulator's placements (default ``first-fit``), shown the GPUs as
   their models, their closed slices and Slurm's node power states have them
   (:mod:`wattsched.slurm.placement`). A job of several GPUs runs as the simulator's gang: it reserves whole
   GPUs of one node, and is released on one slice of each once they are empty (:mod:`wattsched.slurm.gangs`).
3. **Ask each model for its decision** — the policy the simulator runs (default ``edf-ss-restricted``), on the
   engine's own state — and carry out the difference: a job the model puts on a slice is given that slice's
   GRES type, pinned to the node and released (a job whose Slurm record names another type is first
   renewed: replaced by a copy that names none, since Slurm keeps every type a job was given); a running
   job the model takes off its slice is, when it is preemptible and preemption is on, sent the checkpoint
   signal and requeued (held) ``grace_s`` later;
   otherwise it keeps its slice and the model is told so.
4. **Charge energy**: each GPU's energy counter is read and the interval since the last reading is shared
   among the jobs that were busy in it (:mod:`wattsched.slurm.energy`). A running job's AdminComment says
   ``wattsched_energy_j=<joules>`` so far, renewed at every pass (Slurm refuses any change to a job once it
   has ended, so the comment it keeps is the last one written, at most one pass before the end); the exact
   total is in the state file (``wattsched slurm jobs``) and, where Slurm keeps accounting (slurmdbd), written
   into the ended job's accounting record, journaled and retried until it lands
   (:mod:`wattsched.slurm.accounting`).
5. **Set GPU clocks** where the config turns them on: each GPU's SM clock for its running jobs, unlocked when
   it is idle and when the controller stops (:mod:`wattsched.slurm.clocks`, :meth:`Controller.close`).

6. **Repartition** (a node whose partitioner is not static): each GPU's partitioner is asked for a
   configuration at the GPU's decision epochs (before step 3 gives jobs slices), and a change is carried
   out live in phases (drain, wait, apply, gres, resume; :mod:`wattsched.slurm.repartition`), each
   journaled in the state file.

7. **Write the metrics** where ``[slurm] metrics_file`` says: power, energy, queues, decisions, repartitions
   and powered-down nodes in Prometheus's text format, for node_exporter (:mod:`wattsched.slurm.metrics`).

Every action is journaled in the state file before it is sent (:mod:`wattsched.slurm.state`); on start the
pending ones are reconciled with Slurm, and the models are rebuilt from the state file. ``dry_run`` logs each
decision and sends nothing.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Protocol

from wattsched.cluster.gangs import choose_members
from wattsched.cluster.placement import PLACEMENTS, PlacementPolicy
from wattsched.errors import ConfigError, WattschedError
from wattsched.hardware.gpu.apply import current_layout
from wattsched.hardware.gpu.backend import GpuBackend, GpuError
from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type, is_state_file
from wattsched.hardware.mig import Configuration, MigGpu
from wattsched.mig.partition import PARTITIONERS, RepartitionPolicy
from wattsched.mig.simulator import MigSimulation
from wattsched.slurm.accounting import AccountingWriter, energy_comment
from wattsched.slurm.annotations import AnnotationError, parse_annotation
from wattsched.slurm.client import JobState, SlurmApi, SlurmJob, SlurmNode, parse_gres
from wattsched.slurm.clocks import GpuClocks
from wattsched.slurm.config import ControllerConfig, NodeConfig
from wattsched.slurm.energy import BusySlice, split_energy
from wattsched.slurm.gangs import format_members, gang_gres, parse_members, slurm_pick
from wattsched.slurm.gres_update import device_order, device_uuids
from wattsched.slurm.jobs import engine_job
from wattsched.slurm.metrics import GpuMetrics, JobMetrics, MetricsView, write_metrics
from wattsched.slurm.placement import POWERED_DOWN_FLAGS, LiveGpu, LivePlacement
from wattsched.slurm.repartition import ReloadError, carry_out, destroyed_slices, open_gpu_backend, run_reload
from wattsched.slurm.state import (
    ACTIVE,
    ON_SLICE,
    OPEN_PHASES,
    Action,
    JobRow,
    Reading,
    Repartition,
    StateStore,
)
from wattsched.workload.job import Job, JobKind, Scaling

__all__ = ["ACTIVE", "ON_SLICE", "Controller", "EnergyMeter", "GpuModel", "PassReport", "open_meter"]

log = logging.getLogger(__name__)


class EnergyMeter(Protocol):
    def energy_mj(self, gpu_index: int) -> int | None: ...


@dataclass
class GpuModel:
    """One GPU of a node: its layout, its GRES types and the engine that models it."""

    node: str
    index: int
    gpu: MigGpu
    configuration: Configuration
    sim: MigSimulation
    #: Slurm job id -> rank in ``sim``, and back.
    ranks: dict[int, int] = field(default_factory=dict)
    job_of: dict[int, int] = field(default_factory=dict)
    #: The GPU's partitioner (``None``: its configuration never changes).
    partitioner: RepartitionPolicy | None = None
    #: The repartition under way on this GPU, and the slices of this GPU that take no job while one of its
    #: node's GPUs is repartitioned (those it destroys, and kept ones whose Slurm device index moves).
    repartition: Repartition | None = None
    draining: frozenset[int] = frozenset()
    #: Slices of the configuration in force that the GPU does not hold (a repartition whose roll back the GPU
    #: refused): they take no job until they are there again.
    missing: frozenset[int] = frozenset()
    #: While this GPU is repartitioned: every GPU's (index) slices held, this one's and its node peers'.
    held: dict[int, frozenset[int]] = field(default_factory=dict)
    #: The multi-GPU job (its Slurm id) that reserved this GPU (:mod:`wattsched.slurm.gangs`); it takes no
    #: other job until that one ends.
    gang: int | None = None
    #: Whether the node's GRES types name their GPU (``gres_per_gpu``).
    per_gpu: bool = False

    @property
    def labels(self) -> list[str]:
        return [s.label for s in self.configuration.slices]

    @property
    def closed(self) -> frozenset[int]:
        """The slices that take no job now (drained for a repartition, or missing from the GPU)."""
        return self.draining | self.missing

    def gres_type(self, slice_index: int) -> str:
        """The GRES type of one of its slices, as its node names types."""
        profile = self.configuration.slices[slice_index].profile
        return gres_type(self.gpu, profile, self.index if self.per_gpu else None)

    def gres(self, slice_index: int) -> str:
        return f"gpu:{self.gres_type(slice_index)}:1"

    @property
    def name(self) -> str:
        return f"{self.node}/{self.index}"


@dataclass
class PassReport:
    """What one pass did (for logs and tests)."""

    time_s: float
    arrived: list[int] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)
    started: list[int] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    preempted: list[int] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    #: Repartitions that moved to another phase in this pass: ``(node/gpu, phase)``.
    repartitions: list[tuple[str, str]] = field(default_factory=list)


def open_meter(backend: str) -> EnergyMeter:
    """The energy counters of a node's GPUs: a fake GPU state file, or NVML on this host."""
    if backend.startswith("fake:") and is_state_file(backend.removeprefix("fake:")):
        return FakeGpuState(backend.removeprefix("fake:"))
    from wattsched.hardware.gpu import open_backend

    opened = open_backend(backend)

    class _Backend:
        def energy_mj(self, gpu_index: int) -> int | None:
            joules = opened.energy_j(gpu_index)
            return None if joules is None else round(joules * 1000.0)

    return _Backend()


class Controller:
    """Watches one Slurm partition and schedules its jobs on the configured GPUs (module docstring)."""

    def __init__(
        self,
        config: ControllerConfig,
        slurm: SlurmApi,
        store: StateStore,
        *,
        dry_run: bool = False,
        clock: Callable[[], float] = time.time,
        meters: dict[str, EnergyMeter] | None = None,
        partitioners: dict[str, RepartitionPolicy] | None = None,
        gpu_backends: dict[str, GpuBackend] | None = None,
        placement: PlacementPolicy | None = None,
    ) -> None:
        """``partitioners``: per GPU (``node/index``) a partitioner instead of the node's configured one;
        ``gpu_backends``: per node the GPU backend that clocks and repartitions change (default: the one its
        ``backend`` setting opens); ``placement``: the placement instead of the configured one."""
        self.config = config
        self.slurm = slurm
        self.store = store
        self.dry_run = dry_run
        self.clock = clock
        self.origin_s = store.origin_s(clock(), midnight=config.time_origin == "midnight")
        self.meters = meters if meters is not None else {n.name: open_meter(n.backend) for n in config.nodes}
        #: GPU clocks (the nodes ``config.clocks`` names; ``gpu_backends`` in place of opening theirs).
        self.clocks = GpuClocks(config, store, dry_run=dry_run, backends=gpu_backends, log_decision=self._log)
        self._backends: dict[str, GpuBackend] = dict(gpu_backends or {})
        #: Ended jobs' exact energies into Slurm's accounting database, where it has one.
        self.accounting = AccountingWriter(slurm, store, dry_run=dry_run, log_decision=self._log)
        self.gpus: list[GpuModel] = []
        for node in config.nodes:
            for i, gpu in enumerate(node.gpus):
                configuration, open_entry = self._configuration_in_force(node, i, gpu)
                model = GpuModel(node.name, i, gpu, configuration, self._new_sim(node, i, configuration))
                model.per_gpu = node.gres_per_gpu
                model.partitioner = self._partitioner(node, i, gpu, partitioners)
                model.repartition = open_entry
                self.gpus.append(model)
        self._by_name = {g.name: g for g in self.gpus}
        for model in self.gpus:  # a repartition under way at the last stop goes on
            if model.repartition is not None:
                self._hold(model, model.gpu.configuration(_ident(model.repartition.to_config)))
        self._recovered = False
        rows = store.jobs()
        #: Every job id the state file has (new ones arrive), and the comment and GRES of those held for them
        #: (read again once their owner changes either).
        self._known = {row.job_id for row in rows}
        self._rejected = {r.job_id: (r.comment, r.gres or "") for r in rows if r.phase == "rejected"}
        #: The active jobs' rows (the controller is the state file's only writer: it keeps them in memory
        #: and writes each change through; read back at recovery). Measured: benchmarks/bench_slurm.py (c).
        self._rows: dict[int, JobRow] = {}
        #: Jobs a failed renewal left asking for a GRES type their node no longer has (said once each).
        self._stranded: set[int] = set()
        #: Nodes where a gang (by job id) cannot get one slice of each GPU (:meth:`_gang_blocked`).
        self._unfit: dict[int, set[str]] = {}
        #: Picks each new job's GPU (:mod:`wattsched.slurm.placement`).
        self.placement = placement if placement is not None else PLACEMENTS.make(config.placement)
        #: This pass's placement of new jobs (built at the first one) and Slurm's nodes (read once a pass).
        self._placing: LivePlacement | None = None
        self._nodes: dict[str, SlurmNode] | None = None
        self._powering: set[str] = set()  # nodes asked to power up in this pass
        #: For the metrics: actions carried out since the start by kind, repartition phases entered by
        #: (node, GPU, phase), and each GPU's mean power over the last interval its counter was read (W).
        self.decisions: Counter[str] = Counter()
        self.repartition_phases: Counter[tuple[str, int, str]] = Counter()
        self._power_w: dict[str, float] = {}

    # ------------------------------------------------------------------ the loop
    def run(self, should_stop: Callable[[], bool], sleep: Callable[[float], None] = time.sleep) -> None:
        """Pass after pass until ``should_stop()`` (checked between passes and during the wait)."""
        while not should_stop():
            started = self.clock()
            self.run_once()
            wait = self.config.poll_s - (self.clock() - started)
            while wait > 0 and not should_stop():
                step = min(wait, 0.2)
                sleep(step)
                wait -= step

    def run_once(self) -> PassReport:
        """One pass (module docstring)."""
        now = self.clock()
        report = PassReport(now)
        self._placing, self._nodes, self._powering = None, None, set()
        if not self._recovered:
            self._recover(now)
            self._recovered = True
        seen = {job.job_id: job for job in self.slurm.jobs(self.config.partition)}
        self._charge_energy(now, seen)
        # What happened to the known jobs, told to the models in time order.
        events = []
        for row in self._active():
            job = seen.get(row.job_id) or self.slurm.job(row.job_id)
            events.append((_event_time(row, job, now), row.job_id, row, job))
        # Slurm's times are whole seconds: at a tie an end comes first (the slice it frees may be the one a
        # job started on in the same second).
        for _, _, row, job in sorted(events, key=lambda e: (e[0], not _ends(e[3]), e[1])):
            self._follow(row, job, now, report)
        self._unpark(seen, now, report)
        for job in sorted(seen.values(), key=lambda j: (j.submit_s or now, j.job_id)):
            if job.job_id not in self._known:
                if not job.state.finished:
                    self._arrive(job, now, report)
            elif job.job_id in self._rejected:
                self._reread(job, now, report)
        epochs = set()
        for job_id in (*report.arrived, *report.finished):
            seen_row = self._rows.get(job_id) or self.store.job(job_id)
            if seen_row is not None:
                epochs.add(f"{seen_row.node}/{seen_row.gpu}")
        self._step_gangs(now, report)
        active = _by_gpu(self._active())
        for model in self.gpus:
            if model.missing:
                self._check_missing(model, now)
            if model.repartition is not None and not self.dry_run:
                self._step_repartition(model, now, report)
                active = _by_gpu(self._active())
            if model.partitioner is not None and model.repartition is None and model.name in epochs:
                self._ask_partitioner(model, now, report)
            mine = {r.job_id: r for r in active.get((model.node, model.index), ())}
            self._decide(model, mine, now, report)
            self.clocks.follow(model, now, self._rel(now))
        self._store_readings(self._active())
        self.accounting.write(now)
        for name, phase in report.repartitions:
            model = self._by_name[name]
            self.repartition_phases[(model.node, model.index, phase)] += 1
        if self.config.metrics_path is not None:
            try:
                write_metrics(self.config.metrics_path, self._metrics(now, report))
            except OSError as exc:
                log.warning("metrics not written to %s: %s", self.config.metrics_path, exc)
        return report

    def close(self) -> None:
        """The controller stops: unlock the GPU clocks it set (nothing else needs undoing)."""
        self.clocks.close(self.clock(), self.gpus)

    def _active(self) -> list[JobRow]:
        """The rows of the jobs still managed (those that ended are let go)."""
        for job_id in [i for i, row in self._rows.items() if row.phase not in ACTIVE]:
            del self._rows[job_id]
        return list(self._rows.values())

    def _reread(self, job: SlurmJob, now: float, report: PassReport) -> None:
        """A job held for its annotation or its GPU count: done once it ends, read again once its owner
        changes the comment or the GRES."""
        row = self.store.job(job.job_id)
        if row is None:
            return
        if job.state.finished:
            row.phase, row.slurm_state, row.end_s = "done", job.state, job.end_s
            self.store.put_job(row)
            del self._rejected[job.job_id]
        elif (job.comment, job.gres or "") != self._rejected[job.job_id] and job.state == JobState.PENDING:
            del self._rejected[job.job_id]
            self._arrive(job, now, report)  # its owner fixed the annotation: read it again

    # ------------------------------------------------------------------ observations
    def _arrive(self, job: SlurmJob, now: float, report: PassReport) -> None:
        submit = job.submit_s if job.submit_s is not None else now
        row = JobRow(
            job.job_id,
            "queued",
            user=job.user,
            name=job.name,
            slurm_state=job.state,
            submit_s=submit,
            comment=job.comment,
        )
        try:
            note = parse_annotation(job.comment, submit_s=submit, time_limit_s=job.time_limit_s, now_s=now)
        except AnnotationError as exc:
            self._reject(row, job, str(exc), now, report)
            return
        row.deadline_s, row.kind, row.scaling = note.deadline_s, note.kind.value, note.scaling.value
        row.work_s, row.preemptible = note.work_s, int(note.preemptible)
        reason = self._gpus_refused(row, job, note.gpus if "gpus" not in note.defaulted else None)
        if reason is not None:
            self._reject(row, job, reason, now, report)
            return
        if row.gpus > 1:  # a gang: it waits at the cluster for GPUs of one node (_step_gangs)
            row.preemptible = 0
            self._admit(row, report)
            self._log(now, f"job {job.job_id} waits for {row.gpus} GPUs of one node")
            return
        model = self._place(row, now)
        if model is None:  # every GPU is a gang's: it waits at the cluster
            self._admit(row, report)
            self._log(now, f"job {job.job_id} waits: every GPU is held by a multi-GPU job")
            return
        self._settle(row, model, job, now, report, arriving=True)

    def _admit(self, row: JobRow, report: PassReport) -> None:
        """A new job's row is written, kept among the active ones and reported arrived."""
        self.store.put_job(row)
        self._known.add(row.job_id)
        self._rows[row.job_id] = row
        report.arrived.append(row.job_id)

    def _settle(
        self, row: JobRow, model: GpuModel, job: SlurmJob, now: float, report: PassReport, *, arriving: bool
    ) -> None:
        """A placed job reaches its GPU's model, or waits for its node's boot; ``arriving``: it is new in
        this pass (not one that waited at the cluster)."""
        row.node, row.gpu = model.node, model.index
        power = self._node_power(model.node)
        if power in ("off", "booting") and job.state == JobState.PENDING:
            row.phase = "booting"  # waits at the cluster; reaches its GPU's model once the node is up
        if arriving:
            self._admit(row, report)
        else:
            self.store.put_job(row)
        if row.phase == "booting":
            self._log(now, f"job {job.job_id} waits for node {model.node} ({power}) to be up")
            self._waits_for_boot(model.node, job.job_id, power, now)
            return
        self._add_to_model(model, row, now)
        if job.state == JobState.RUNNING:  # started without us (no hold plugin?): follow it
            self._follow(row, job, now, report)

    def _gpus_refused(self, row: JobRow, job: SlurmJob, annotated: int | None) -> str | None:
        """Set the GPUs a new job needs (its annotation's ``gpus``, else its ``--gres=gpu:N``); the reason it
        cannot run (one line), or ``None``."""
        asked = sum(entry.count for entry in parse_gres(job.gres) if entry.name == "gpu")
        if annotated is not None and asked > 1 and asked != annotated:
            return f"it asks for {asked} GPUs (--gres={job.gres}) and gpus={annotated} in its annotation"
        row.gpus = annotated if annotated is not None else max(asked, 1)
        largest = max(self.config.nodes, key=lambda node: len(node.gpus))
        if row.gpus > len(largest.gpus):
            return (
                f"it asks for {row.gpus} GPUs of one node; the largest node, {largest.name}, has "
                f"{len(largest.gpus)}"
            )
        return None

    def _reject(self, row: JobRow, job: SlurmJob, reason: str, now: float, report: PassReport) -> None:
        """Hold a job the controller cannot run, with ``reason`` (one line) in its AdminComment; read again
        once its owner changes its comment or its GRES."""
        row.phase, row.error, row.gres = "rejected", reason, job.gres or None
        self.store.put_job(row)
        self._known.add(job.job_id)
        self._rejected[job.job_id] = (job.comment, job.gres or "")
        # The client writes it as "wattsched: <reason>" into the AdminComment.
        self._act(job.job_id, "hold_with_reason", {"reason": reason}, now)
        self._log(now, f"job {job.job_id} held: {reason}")
        report.rejected.append(job.job_id)

    def _place(self, row: JobRow, now: float) -> GpuModel | None:
        """The GPU the placement picks for a new job (the first of a pass brings every model to now);
        ``None`` when gangs hold every GPU that could take it (it waits at the cluster: :meth:`_unpark`)."""
        if self._placing is None:
            live = []
            waiting = Counter((r.node, r.gpu) for r in self._rows.values() if r.phase == "booting")
            for model in self.gpus:
                power = self._node_power(model.node)
                assignment = model.sim.decide(self._rel(now))
                live.append(
                    LiveGpu(
                        model.node,
                        model.sim,
                        assignment,
                        model.closed,
                        powered_down=power == "off",
                        waiting=waiting[(model.node, model.index)],
                        offline=power == "down",
                        gang=model.gang is not None,
                    )
                )
            self._placing = LivePlacement(self.placement, live)
        index = self._placing.choose(self._engine_job(row), self._rel(now))
        return self.gpus[index] if index >= 0 else None

    def _node_power(self, name: str) -> str:
        """A node's power as Slurm reports it this pass: ``off`` (powered down or powering down);
        ``booting`` (``POWER_UP``: asked to power up, then ``POWERING_UP`` until its slurmd registers);
        ``down`` (Slurm set it down or failed, as after a resume that never came back: no job goes there);
        else ``up`` (also where Slurm did not answer or does not know the node; a node drained or briefly not
        responding, as during a repartition's reload, is up)."""
        node = self._slurm_nodes().get(name)
        if node is None:
            return "up"
        if {"POWER_UP", "POWERING_UP"}.intersection(node.state_flags):  # asked to, then resuming
            return "booting"
        if _powered_down(node) and node.state != "down":
            return "off"
        return "down" if node.state == "down" or "FAIL" in node.state_flags else "up"

    def _power_up(self, node: str, job_id: int, now: float) -> None:
        """Ask Slurm to turn ``node`` on for ``job_id`` (journaled; once a pass per node)."""
        if node in self._powering:
            return
        self._powering.add(node)
        if self._act(job_id, "power_up", {"node": node}, now):
            self._log(now, f"node {node} is off: asked Slurm to turn it on for job {job_id}")

    def _waits_for_boot(self, node: str, job_id: int, power: str, now: float) -> bool:
        """Whether a job placed on ``node`` (its power ``power``) waits for it: when it is off or booting;
        one that is off is asked to power up for ``job_id``."""
        if power == "off":
            self._power_up(node, job_id, now)
        return power in ("off", "booting")

    def _await_boot(self, row: JobRow, job: SlurmJob | None, now: float, report: PassReport) -> None:
        """A job waiting for its node: it reaches its GPU's model (arriving now) once the node is up, as the
        data-centre simulator's held jobs reach their GPU when the boot ends; placed again if the node goes
        down instead (a resume that failed: Slurm's ``ResumeTimeout``); done if it ended meanwhile."""
        model = self._by_name.get(f"{row.node}/{row.gpu}")
        if job is None or job.state.finished:
            row.phase, row.slurm_state = "done", job.state if job is not None else JobState.COMPLETED
            row.end_s = job.end_s if job is not None else now
            self.store.put_job(row)
            return
        power = self._node_power(row.node or "")
        pending = job.state == JobState.PENDING
        if model is not None and power == "down" and pending:
            self._log(now, f"node {row.node} is down: job {row.job_id} placed again")
            model = self._place(row, now)
            if model is None:  # every GPU is a gang's: it waits at the cluster
                row.phase, row.node, row.gpu = "queued", None, None
                self.store.put_job(row)
                return
            row.node, row.gpu = model.node, model.index
            power = self._node_power(model.node)
            self.store.put_job(row)
        if model is None or (pending and self._waits_for_boot(model.node, row.job_id, power, now)):
            return  # still off (asked again: the last request did not take yet) or booting
        row.phase = "queued"
        self.store.put_job(row)
        self._log(now, f"node {model.node} is up: job {row.job_id} reaches {model.name}")
        self._add_to_model(model, row, now)
        if not pending:  # Slurm started it without us: follow it
            self._follow(row, job, now, report)

    def _slurm_nodes(self) -> dict[str, SlurmNode]:
        """Slurm's nodes by name, read once a pass (empty, logged, when Slurm does not answer)."""
        if self._nodes is None:
            try:
                self._nodes = {node.name: node for node in self.slurm.nodes()}
            except WattschedError as exc:
                log.warning("node states not read (placement and metrics go without them): %s", exc)
                self._nodes = {}
        return self._nodes

    def _engine_job(self, row: JobRow) -> Job:
        assert row.submit_s is not None and row.deadline_s is not None and row.work_s is not None
        return engine_job(
            str(row.job_id),
            max(row.submit_s - self.origin_s, 0.0),
            row.deadline_s - self.origin_s,
            JobKind(row.kind or JobKind.TRAINING),
            Scaling(row.scaling or Scaling.LINEAR),
            row.work_s,
        )

    def _add_to_model(self, model: GpuModel, row: JobRow, at_s: float) -> int:
        """A job into a GPU's model; one the controller may not move off its slice once it runs (not
        preemptible, or preemption off) is pinned there, so that the model plans around it rather than on a
        slice it cannot have."""
        rank = model.sim.observe_arrival(self._engine_job(row), at_s - self.origin_s)
        model.ranks[row.job_id] = rank
        model.job_of[rank] = row.job_id
        if not (self.config.preemption and row.preemptible):
            model.sim.pin(rank)
        return rank

    def _follow(self, row: JobRow, job: SlurmJob | None, now: float, report: PassReport) -> None:
        """Bring a known job's row and its model up to what Slurm says."""
        if row.gpus > 1:
            self._follow_gang(row, job, now, report)
            return
        if row.node is None:  # waiting at the cluster for a GPU no gang holds (_unpark)
            if job is None or job.state.finished:
                self._ended_waiting(row, job, now)
            return
        if row.phase == "booting":
            self._await_boot(row, job, now, report)
            return
        model = self._by_name.get(f"{row.node}/{row.gpu}")
        if model is None or row.job_id not in model.ranks:
            return
        state = job.state if job is not None else JobState.COMPLETED  # gone from Slurm: it ended
        before = row.slurm_state
        row.slurm_state = state
        ran = job is not None and job.start_s is not None and (state == JobState.RUNNING or state.finished)
        if ran and row.phase in ("queued", "released"):
            self._started(model, row, job, now, report)
        if state.finished:
            self._ended(model, row, job, now, report)
        elif (
            row.phase == "signalled"
            and row.signalled_s is not None
            and (now >= row.signalled_s + self.config.grace_s)
        ):
            self._requeue(model, row, now, report)
        elif state == JobState.PENDING and row.phase in ON_SLICE:  # requeued by someone else
            self._requeued(model, row, now)
        elif state != before:
            self.store.put_job(row)

    def _started(
        self, model: GpuModel, row: JobRow, job: SlurmJob | None, now: float, report: PassReport
    ) -> None:
        where, slice_index = self._slice_of(model, job, row)
        moved = where is not model
        if moved:
            model = self._move(row, model, where, now)
        start = job.start_s if job is not None and job.start_s is not None else now
        row.phase, row.run_start_s, row.slice_index = "running", start, slice_index
        row.start_s = row.start_s if row.start_s is not None else start
        row.slice = model.labels[slice_index]
        rank = model.ranks[row.job_id]
        if moved:
            # It arrived in this model now, so it cannot have started before: it runs there from now. The
            # arrival is handled first (as a rebuild does); where that decision already puts it on its slice,
            # its run counts from now (at most a pass more work than it has left; its real end is observed),
            # else it is placed there with the work it ran since Slurm's start done.
            remaining = self._remaining_at(model, row, now)
            model.sim.decide(self._rel(now))
            self._tell(
                model,
                row,
                lambda: model.sim.observe_start(rank, slice_index, self._rel(now), remaining=remaining),
            )
        else:
            self._tell(model, row, lambda: model.sim.observe_start(rank, slice_index, self._rel(start)))
        self.store.put_job(row)
        self._log(now, f"job {row.job_id} started on {model.name} slice {row.slice}")
        report.started.append(row.job_id)

    def _tell(self, model: GpuModel, row: JobRow, observation: Callable[[], None]) -> None:
        """Tell a model what Slurm says; where the model cannot follow (it thinks the job ended or never
        arrived), Slurm is right: say so once in the log and go on."""
        try:
            observation()
        except ValueError as exc:
            log.warning(
                "%s: the model of job %d disagrees with Slurm (%s); Slurm's view kept",
                model.name,
                row.job_id,
                exc,
            )

    def _ended(
        self, model: GpuModel, row: JobRow, job: SlurmJob | None, now: float, report: PassReport
    ) -> None:
        rank = model.ranks[row.job_id]
        end = job.end_s if job is not None and job.end_s is not None else now
        if rank in model.sim.predicted_completions():
            self._tell(model, row, lambda: model.sim.observe_completion(rank, self._rel(end)))
        else:
            self._tell(model, row, lambda: model.sim.observe_cancel(rank, self._rel(end)))
        row.phase, row.end_s = "done", end
        if row.start_s is not None and row.deadline_s is not None:
            row.tardiness_s = max(0.0, end - row.deadline_s)
        with self.store.transaction():  # the final energy is owed to Slurm's accounting as the job ends
            self.store.put_job(row)
            self.accounting.owe(row, now)
        energy_j = row.energy_mj / 1000.0
        self._log(now, f"job {row.job_id} ended ({row.slurm_state}) on {model.name}: {energy_j:.1f} J")
        report.finished.append(row.job_id)

    def _slice_of(self, model: GpuModel, job: SlurmJob | None, row: JobRow) -> tuple[GpuModel, int]:
        """The GPU and slice a job really got: by its MIG UUID where the GPUs' state names them (the client
        turns Slurm's GRES indices into UUIDs), looked up on the GPU it was released for first, then on the
        node's other GPUs (a GRES request names a slice type, not a GPU: where two GPUs of a node offer the
        type, Slurm may start the job on either); else the slice it was released for."""
        if job is not None:
            peers = [model] + [p for p in self.gpus if p.node == model.node and p is not model]
            for peer in peers:
                found = self._uuid_slice(peer, job.gpu_uuids)
                if found is not None:
                    return peer, found
        if row.slice_index is not None:
            return model, row.slice_index
        rank = model.ranks[row.job_id]
        return model, next(
            (s for s, r in enumerate(model.sim.decide(self._rel(self.clock()))) if r == rank), 0
        )

    def _uuid_slice(self, model: GpuModel, uuids: Iterable[str]) -> int | None:
        """The slice of ``model`` the first of ``uuids`` that is one of its MIG instances names, where its
        node's GPU state names instances (a fake GPU); ``None`` otherwise."""
        meter = self.meters.get(model.node)
        if not isinstance(meter, FakeGpuState):
            return None
        labels = {inst.uuid: inst.label for inst in meter.instances(model.index)}
        for uuid in uuids:
            if labels.get(uuid) in model.labels:
                return model.labels.index(labels[uuid])
        return None

    def _move(self, row: JobRow, model: GpuModel, where: GpuModel, now: float) -> GpuModel:
        """A job Slurm started on another GPU of its node than the one it was released for: it leaves the
        first GPU's model (withdrawn there, as a cancelled job is) and arrives in the other's, where it is
        charged from now on; logged once."""
        rank = model.ranks.pop(row.job_id)
        model.job_of.pop(rank, None)
        self._tell(model, row, lambda: model.sim.observe_cancel(rank, self._rel(now)))
        row.node, row.gpu = where.node, where.index
        self._add_to_model(where, row, now)
        self._log(
            now,
            f"job {row.job_id} was released for {model.name} but Slurm started it on {where.name} "
            "(same slice type): followed there",
        )
        return where

    def _requeue(self, model: GpuModel, row: JobRow, now: float, report: PassReport) -> None:
        if self._act(row.job_id, "requeue_hold", {}, now, row, **self._requeue_changes(model, row, now)):
            self._tell_requeue(model, row, now)
            self._log(now, f"job {row.job_id} requeued (held) with {row.remaining:.1%} of its work left")
            report.requeued.append(row.job_id)

    def _requeued(self, model: GpuModel, row: JobRow, now: float) -> None:
        """Requeued by someone else: the model is told, nothing is sent."""
        for key, value in self._requeue_changes(model, row, now).items():
            setattr(row, key, value)
        self.store.put_job(row)
        self._tell_requeue(model, row, now)

    def _tell_requeue(self, model: GpuModel, row: JobRow, now: float) -> None:
        rank = model.ranks[row.job_id]
        self._tell(model, row, lambda: model.sim.observe_requeue(rank, self._rel(now), row.remaining))

    def _remaining_at(self, model: GpuModel, row: JobRow, now: float) -> float:
        """The fraction of its work a job has left at ``now``: what it had at its last start, less what it
        has run on its slice since, at the speed of the GPU clock applied meanwhile (never quite 0: a job
        still running has something left)."""
        if row.run_start_s is None or row.slice_index is None:
            return row.remaining
        duration = model.sim.duration_on(model.ranks[row.job_id], row.slice_index)
        return max(row.remaining - self.clocks.work_s(model.name, row.run_start_s, now) / duration, 1e-6)

    def _requeue_changes(self, model: GpuModel, row: JobRow, now: float) -> dict[str, object]:
        """The row of a job that leaves its slice at ``now``: it waits again, the work it did kept."""
        return {
            "phase": "queued",
            "remaining": self._remaining_at(model, row, now),
            "preemptions": row.preemptions + 1,
            "signalled_s": None,
            "run_start_s": None,
        }

    # ------------------------------------------------------------------ gangs
    def _step_gangs(self, now: float, report: PassReport) -> None:
        """The multi-GPU jobs' turn in a pass (:mod:`wattsched.slurm.gangs`): the first waiting one reserves
        GPUs when none is emptying its reserved ones, and one whose GPUs are all empty is released."""
        gangs = sorted(
            (r for r in self._rows.values() if r.gpus > 1 and r.phase == "queued"),
            key=lambda r: (r.submit_s or 0.0, r.job_id),
        )
        while gangs:
            reserved = next((r for r in gangs if r.members is not None), None)
            if reserved is None:
                reserved = gangs[0]
                if not self._reserve(reserved, now):
                    return  # other gangs hold the GPUs, or no node has enough up: again next pass
            if not self._release_gang(reserved, now, report):
                return
            gangs.remove(reserved)

    def _reserve(self, row: JobRow, now: float) -> bool:
        """Reserve GPUs for a waiting gang by the simulator's rule, on nodes that are not down."""
        nodes = list(dict.fromkeys(model.node for model in self.gpus))
        servers = [[g for g, model in enumerate(self.gpus) if model.node == node] for node in nodes]
        counts = self._single_jobs()
        loads = [counts[(model.node, model.index)] for model in self.gpus]
        unfit = self._unfit.get(row.job_id, set())
        held = [
            m.gang is not None or m.node in unfit or self._node_power(m.node) == "down" for m in self.gpus
        ]
        chosen = choose_members(row.gpus, servers, loads, held)
        if not chosen:
            return False
        models = [self.gpus[g] for g in chosen]
        for model in models:
            model.gang = row.job_id
        row.node, row.gpu = models[0].node, models[0].index
        row.members = format_members({model.index: None for model in models})
        self.store.put_job(row)
        self._log(now, f"job {row.job_id} reserves {', '.join(m.name for m in models)} ({row.gpus} GPUs)")
        if self._node_power(row.node) == "off":
            self._power_up(row.node, row.job_id, now)
        return True

    def _unpark(self, seen: dict[int, SlurmJob], now: float, report: PassReport) -> None:
        """Single-GPU jobs that found every GPU held by gangs are placed once one is free, in arrival order,
        before this pass's new jobs (the engine places them as the gang ends)."""
        parked = [r for r in self._rows.values() if r.gpus == 1 and r.node is None and r.phase == "queued"]
        for row in sorted(parked, key=lambda r: (r.submit_s or 0.0, r.job_id)):
            job = seen.get(row.job_id)
            if job is None or job.state.finished:
                continue  # _follow saw it end
            model = self._place(row, now)
            if model is None:
                return
            self._settle(row, model, job, now, report, arriving=False)

    def _ended_waiting(self, row: JobRow, job: SlurmJob | None, now: float) -> None:
        """A job that ended (cancelled, or gone from Slurm) while it waited at the cluster, in no model."""
        row.phase, row.slurm_state = "done", job.state if job is not None else JobState.COMPLETED
        row.end_s = job.end_s if job is not None and job.end_s else now
        self.store.put_job(row)

    def _single_jobs(self) -> Counter[tuple[str | None, int | None]]:
        """The single-GPU jobs each GPU has (waiting for its node, queued, released or running)."""
        return Counter((r.node, r.gpu) for r in self._rows.values() if r.gpus == 1 and r.phase in ACTIVE)

    def _unreserve(self, row: JobRow) -> None:
        for model, _ in self._homes(row):
            if model.gang == row.job_id:
                model.gang = None

    def _drop_reservation(self, row: JobRow) -> None:
        """A gang gives its reserved GPUs back and waits to reserve again."""
        self._unreserve(row)
        row.node = row.gpu = row.members = None
        self.store.put_job(row)

    def _release_gang(self, row: JobRow, now: float, report: PassReport) -> bool:
        """Release a reserved gang once its GPUs are empty and its node up: each GPU's policy gives it the
        slice it gives a job on an idle GPU (the first slice of that profile there), and the one Slurm job
        asks for those slices' types, where Slurm's pick is one of them on each GPU (module
        :mod:`wattsched.slurm.gangs`). Whether it was released."""
        assert row.node is not None
        models = [model for model, _ in self._homes(row)]
        counts = self._single_jobs()
        power = self._node_power(row.node)
        if power == "off":
            self._power_up(row.node, row.job_id, now)
        elif power == "down":  # a resume that never came back: its GPUs are reserved again elsewhere
            self._log(now, f"node {row.node} is down: job {row.job_id} reserves GPUs again")
            self._drop_reservation(row)
            return False
        peers = [g for g in self.gpus if g.node == row.node]
        if (
            power != "up"
            or any(counts[(m.node, m.index)] for m in models)
            or any(g.repartition is not None for g in peers)
        ):
            return False
        slices = {}
        for model in models:
            probe = model.sim.fork()
            rank = probe.observe_arrival(self._engine_job(row), self._rel(now))
            assignment = list(probe.decide(self._rel(now)))
            if rank not in assignment:
                return False  # the policy keeps it waiting (a slice drained): again next pass
            profile = model.configuration.slices[assignment.index(rank)].profile
            slices[model.index] = next(
                s for s, sl in enumerate(model.configuration.slices) if sl.profile == profile
            )
        order = device_order([(g.gpu, g.labels) for g in peers], per_gpu=models[0].per_gpu)
        types = {(g.index, label): g.gres_type(s) for g in peers for s, label in enumerate(g.labels)}
        busy = {
            (gpu, label)
            for r in self._rows.values()
            if r.node == row.node and r.phase in (*ON_SLICE, "released")
            for gpu, label in self._devices_of(r)
        }
        wanted = [(m.index, m.labels[slices[m.index]]) for m in models]
        request = Counter(types[device] for device in wanted)
        picked = slurm_pick(order, types, busy, request) or []
        if sorted(picked) != sorted(wanted):
            return self._gang_blocked(row, models, picked, wanted, now, report)
        for model in models:
            model.sim.pin(self._add_to_model(model, row, now))
        gres = gang_gres([types[device] for device in wanted])
        first = models[0]
        if not self._act(
            row.job_id,
            "release",
            {"gres": gres, "node": row.node},
            now,
            row,
            phase="released",
            members=format_members(slices),
            slice_index=slices[first.index],
            slice=first.labels[slices[first.index]],
            gres=gres,
        ):
            self._withdraw_gang(row, now)
            return False
        where = ", ".join(f"{m.name} slice {m.labels[slices[m.index]]}" for m in models)
        self._log(now, f"job {row.job_id} released on {where} ({gres})")
        report.released.append(row.job_id)
        return True

    def _devices_of(self, row: JobRow) -> list[tuple[int, str]]:
        """The devices (GPU index, slice label) a job holds or is released for on its node."""
        return [
            (model.index, model.labels[s])
            for model, s in self._homes(row)
            if s is not None and s < len(model.labels)
        ]

    def _gang_blocked(
        self,
        row: JobRow,
        models: list[GpuModel],
        picked: list[tuple[int, str]],
        wanted: list[tuple[int, str]],
        now: float,
        report: PassReport,
    ) -> bool:
        """Slurm would not give the gang one slice on each reserved GPU. Where the reserved GPUs themselves
        are why (one offers two free slices of the type it gets), the node cannot run it: the gang reserves
        GPUs elsewhere at the next pass, and is held, one line saying why, when no node is left. Else
        (another GPU's free slice comes first) the reservation is made again at the next pass. ``False``."""
        mine = {m.index for m in models}
        node = row.node
        self._drop_reservation(row)
        extra = [device for device in picked if device[0] in mine and device not in wanted]
        if extra and node is not None:
            gpu, label = extra[0]
            unfit = self._unfit.setdefault(row.job_id, set())
            unfit.add(node)
            big = {n.name for n in self.config.nodes if len(n.gpus) >= row.gpus}
            if big <= unfit:
                job = self.slurm.job(row.job_id)
                reason = (
                    f"it asks for {row.gpus} GPUs: Slurm gives a typed GPU request the first free devices "
                    f"of each type in index order, and on every node one of them offers a second slice of "
                    f"the type the job gets there (GPU {gpu} of {node}: {label.split('@')[0]})"
                )
                del self._unfit[row.job_id]
                if job is not None:
                    self._reject(row, job, reason, now, report)
                return False
            self._log(now, f"job {row.job_id} cannot get one slice of each GPU on {node}: another node next")
            return False
        self._log(
            now,
            f"job {row.job_id}: another GPU's free slice comes first in Slurm's device order; "
            "its GPUs are reserved again",
        )
        return False

    def _withdraw_gang(self, row: JobRow, now: float) -> None:
        """A gang leaves its GPUs' models (its release refused, or Slurm requeued it): it waits reserved."""
        for model, _ in self._homes(row):
            rank = model.ranks.pop(row.job_id, None)
            if rank is not None:
                model.job_of.pop(rank, None)
                self._tell(model, row, partial(model.sim.observe_cancel, rank, self._rel(now)))
        members = parse_members(row.members)
        row.members = format_members(dict.fromkeys(members))
        row.phase, row.slice_index, row.slice, row.run_start_s = "queued", None, None, None
        self.store.put_job(row)

    def _follow_gang(self, row: JobRow, job: SlurmJob | None, now: float, report: PassReport) -> None:
        """Bring a multi-GPU job's row and its GPUs' models up to what Slurm says."""
        state = job.state if job is not None else JobState.COMPLETED  # gone from Slurm: it ended
        row.slurm_state = state
        homes = self._homes(row)
        if row.phase == "queued" or not homes:  # waiting, or reserved: in no model yet
            if state.finished:
                self._unreserve(row)
                self._ended_waiting(row, job, now)
            else:
                self.store.put_job(row)
            return
        ran = job is not None and job.start_s is not None and (state == JobState.RUNNING or state.finished)
        if ran and row.phase == "released":
            self._gang_started(row, job, now, report)
        if state.finished:
            self._gang_ended(row, job, now, report)
        elif state == JobState.PENDING and row.phase in ON_SLICE:  # requeued by someone else
            self._log(now, f"job {row.job_id} was requeued: it waits again for its GPUs")
            self._withdraw_gang(row, now)

    def _gang_started(self, row: JobRow, job: SlurmJob | None, now: float, report: PassReport) -> None:
        """Slurm started a gang: each GPU's model is told its slice there — the one Slurm gave it where the
        GPUs' state names the devices (the released one otherwise)."""
        members = parse_members(row.members)
        got: dict[int, int] = {}
        if job is not None and job.gpu_uuids and isinstance(self.meters.get(row.node or ""), FakeGpuState):
            for model, _ in self._homes(row):
                found = self._uuid_slice(model, job.gpu_uuids)
                if found is not None:
                    got[model.index] = found
            if set(got) != set(members):
                log.warning(
                    "job %d: Slurm gave it devices %s, not one slice of each of GPUs %s of %s",
                    row.job_id,
                    ",".join(job.gpu_uuids),
                    ",".join(map(str, members)),
                    row.node,
                )
        start = job.start_s if job is not None and job.start_s is not None else now
        for gpu, planned in members.items():
            members[gpu] = got.get(gpu, planned)
        for model, _ in self._homes(row):
            rank, slice_index = model.ranks[row.job_id], members[model.index]
            assert slice_index is not None
            self._tell(model, row, partial(model.sim.observe_start, rank, slice_index, self._rel(start)))
        first = self._homes(row)[0][0]
        row.phase, row.run_start_s, row.members = "running", start, format_members(members)
        row.start_s = row.start_s if row.start_s is not None else start
        row.slice_index = members[first.index]
        row.slice = first.labels[members[first.index] or 0]
        self.store.put_job(row)
        self._log(now, f"job {row.job_id} started on {row.node} GPUs {','.join(map(str, members))}")
        report.started.append(row.job_id)

    def _gang_ended(self, row: JobRow, job: SlurmJob | None, now: float, report: PassReport) -> None:
        """A gang ended, on every GPU at once: each model is told, its GPUs take jobs again."""
        end = job.end_s if job is not None and job.end_s is not None else now
        for model, _ in self._homes(row):
            rank = model.ranks[row.job_id]
            if rank in model.sim.predicted_completions():
                self._tell(model, row, partial(model.sim.observe_completion, rank, self._rel(end)))
            else:
                self._tell(model, row, partial(model.sim.observe_cancel, rank, self._rel(end)))
        self._unreserve(row)
        row.phase, row.end_s = "done", end
        if row.start_s is not None and row.deadline_s is not None:
            row.tardiness_s = max(0.0, end - row.deadline_s)
        with self.store.transaction():
            self.store.put_job(row)
            self.accounting.owe(row, now)
        self._log(
            now, f"job {row.job_id} ended ({row.slurm_state}) on {row.node}: {row.energy_mj / 1000:.1f} J"
        )
        report.finished.append(row.job_id)

    # ------------------------------------------------------------------ decisions
    def _decide(self, model: GpuModel, rows: dict[int, JobRow], now: float, report: PassReport) -> None:
        for _ in range(4):  # a declined preemption is told to the model, which decides again
            assignment = model.sim.decide(self._rel(now))
            placed = {model.job_of[rank]: s for s, rank in enumerate(assignment) if rank >= 0}
            pinned = False
            for job_id, row in rows.items():
                if row.phase == "running" and placed.get(job_id) != row.slice_index:
                    if self.config.preemption and row.preemptible:
                        if self._checkpoint(row, now, f"job {job_id} preempted on {model.name}"):
                            report.preempted.append(job_id)
                    else:
                        assert row.slice_index is not None
                        model.sim.observe_start(model.ranks[job_id], row.slice_index, self._rel(now))
                        pinned = True
            if not pinned:
                break
        # A running job the model could not move (not preemptible, or its signal refused) still holds its
        # slice whatever the last decision says: no job is released onto it (Slurm would start that one on
        # any other free slice of the type, which the model gave to another job, or not at all).
        held = {
            r.slice_index
            for r in rows.values()
            if r.phase == "running" and placed.get(r.job_id) != r.slice_index
        }
        for job_id, slice_index in placed.items():
            waiting = rows.get(job_id)
            if waiting is None or waiting.phase != "queued" or slice_index in model.closed | held:
                continue  # a slice a repartition holds, or a job the model could not move, takes no job
            row = waiting
            gres = model.gres(slice_index)
            if row.gres is not None and row.gres != gres and not self.dry_run:
                row = self._renew(model, row, now) or row  # refused: released as it is (logged)
                job_id = row.job_id
            if self._act(
                job_id,
                "release",
                {"gres": gres, "node": model.node},
                now,
                row,
                phase="released",
                slice_index=slice_index,
                slice=model.labels[slice_index],
                gres=gres,
            ):
                self._log(now, f"job {job_id} released on {model.name} slice {row.slice} ({gres})")
                report.released.append(job_id)
        for job_id, row in rows.items():  # released but moved off its slice before Slurm started it
            if row.phase == "released" and (job_id not in placed or row.slice_index in model.closed):
                self._act(job_id, "hold", {}, now, row, phase="queued")

    def _renew(self, model: GpuModel, row: JobRow, now: float) -> JobRow | None:
        """A waiting job whose Slurm record names another GRES type than the slice it is given: Slurm would
        keep the old type in its request (:mod:`wattsched.slurm.client`), so the job is replaced by a copy
        that names none, which takes its row, its place in the model and its energy. ``None`` (logged) when
        Slurm refused the copy: the job is then released as it is, and Slurm may hold it back."""
        marker = f"wattsched: renewal of job {row.job_id}"
        action = self.store.journal(row.job_id, "renew", {"marker": marker}, now)
        try:
            copy = self.slurm.renew(row.job_id, marker)
        except WattschedError as exc:
            log.warning("job %d keeps its GRES %s in Slurm: %s", row.job_id, row.gres, exc)
            self.store.finish_action(action, "failed")
            offered = {
                peer.gres(s) for peer in self.gpus if peer.node == model.node for s in range(len(peer.labels))
            }
            if row.gres not in offered and row.job_id not in self._stranded:
                self._stranded.add(row.job_id)
                self._log(
                    now,
                    f"job {row.job_id} cannot run: its Slurm record asks for {row.gres}, which {model.node} "
                    f"no longer has, and it could not be replaced ({exc}); cancel and resubmit it",
                )
            return None
        return self._take_over(model, row, copy, now, action)

    def _take_over(self, model: GpuModel | None, row: JobRow, copy: int, now: float, action: int) -> JobRow:
        """The copy ``copy`` of a renewed job goes on in its place (one transaction with the action's end)."""
        new = replace(row, job_id=copy, phase="queued", slurm_state=JobState.PENDING, gres=None)
        old = replace(row, phase="renewed", renewed_as=copy, energy_mj=0, slurm_state=JobState.CANCELLED)
        with self.store.transaction():
            self.store.finish_action(action)
            self.store.put_job(old)
            self.store.put_job(new)
        self._rows.pop(row.job_id, None)
        self._rows[copy] = new
        self._known.add(copy)
        if model is not None and row.job_id in model.ranks:
            rank = model.ranks.pop(row.job_id)
            model.ranks[copy] = rank
            model.job_of[rank] = copy
        self._log(now, f"job {row.job_id} renewed as job {copy} (its Slurm record asked for {row.gres})")
        self.decisions["renew"] += 1
        return new

    def _recover_renewal(self, action: Action, now: float) -> None:
        """A renewal cut short by a crash: the copy (by its marker, or, if the crash came before the marker
        was written, an unknown job of the same name and comment submitted since) takes the row over and the
        original is cancelled; without a copy the renewal is forgotten (the next release tries again)."""
        row = self.store.job(action.job_id)
        known = {r.job_id for r in self.store.jobs()}
        marker = action.args.get("marker")
        found = [
            job
            for job in self.slurm.jobs(self.config.partition)
            if job.job_id not in known
            and not job.state.finished
            and (
                job.admin_comment == marker
                or (
                    row is not None
                    and job.comment == row.comment
                    and job.name == row.name
                    and (job.submit_s or 0.0) >= action.time_s - 1.0
                )
            )
        ]
        if row is None or not found:
            self.store.finish_action(action.id, "failed")
            return
        original = self.slurm.job(action.job_id)
        if original is not None and not original.state.finished:
            try:
                self.slurm.cancel(action.job_id)
            except WattschedError as exc:
                log.warning("renewal of job %d: the original not cancelled: %s", action.job_id, exc)
        self._take_over(None, row, max(job.job_id for job in found), now, action.id)

    # ------------------------------------------------------------------ energy
    def _charge_energy(self, now: float, seen: dict[int, SlurmJob]) -> None:
        """Read every GPU's counter once and charge the interval since its last reading to the jobs busy in
        it — the jobs' parts, the idle remainder and the new reading in one transaction, so that a crash
        never charges an interval twice or loses one."""
        comments: list[tuple[int, str]] = []
        for model in self.gpus:
            counter = self.meters[model.node].energy_mj(model.index)
            if counter is None:
                continue
            last = self.store.reading(model.node, model.index)
            if last is None:
                self.store.put_reading(model.node, model.index, Reading(now, counter, [], 0, counter))
                continue
            if counter < last.counter_mj:
                log.warning(
                    "%s: energy counter went back (%d -> %d mJ); interval not charged",
                    model.name,
                    last.counter_mj,
                    counter,
                )
                fresh = Reading(
                    now, counter, last.busy, last.idle_mj, counter - (last.counter_mj - last.first_mj)
                )
                self.store.put_reading(model.node, model.index, fresh)
                continue
            if now > last.time_s:
                self._power_w[model.name] = (counter - last.counter_mj) / 1000.0 / (now - last.time_s)
            busy = [BusySlice(str(job_id), compute, JobKind(kind)) for job_id, compute, kind in last.busy]
            split = split_energy(counter - last.counter_mj, model.gpu, model.configuration, busy)
            with self.store.transaction():
                for key, mj in split.per_job_mj.items():
                    row = self._rows.get(int(key))
                    if row is not None and mj:
                        row.energy_mj += mj
                        self.store.put_job(row)
                        job = seen.get(row.job_id)
                        if row.phase in ON_SLICE and job is not None and not job.state.finished:
                            comments.append((row.job_id, energy_comment(row.energy_mj)))
                reading = Reading(
                    now, counter, last.busy, last.idle_mj + split.idle_remainder_mj, last.first_mj
                )
                self.store.put_reading(model.node, model.index, reading)
        # Slurm refuses any update once a job has ended, so a running job's AdminComment carries its energy so
        # far, renewed at each pass: what it says at the end is what Slurm keeps.
        for job_id, text in comments:
            self._act(job_id, "admin_comment", {"text": text}, now)

    def _store_readings(self, active: list[JobRow]) -> None:
        """The jobs busy on each GPU from this pass's reading on (the counter was read by _charge_energy)."""
        by_gpu = _by_gpu(active)
        gangs: dict[tuple[str | None, int], list[tuple[JobRow, int]]] = {}
        for row in active:
            if row.gpus > 1 and row.phase in ON_SLICE:
                for gpu, slice_index in parse_members(row.members).items():
                    if slice_index is not None:
                        gangs.setdefault((row.node, gpu), []).append((row, slice_index))
        for model in self.gpus:
            last = self.store.reading(model.node, model.index)
            if last is None:
                continue
            here = [
                (row, row.slice_index)
                for row in by_gpu.get((model.node, model.index), ())
                if row.phase in ON_SLICE and row.slice_index is not None
            ] + gangs.get((model.node, model.index), [])
            busy = [
                (row.job_id, model.configuration.slices[s].compute, row.kind or "training") for row, s in here
            ]
            if busy != last.busy:
                self.store.put_reading(model.node, model.index, replace(last, busy=busy))

    def _metrics(self, now: float, report: PassReport) -> MetricsView:
        """What the metrics file says after a pass: the jobs still managed and those that ended in it."""
        rows = list(self._rows.values())
        rows += [
            row for i in report.finished if i not in self._rows and (row := self.store.job(i)) is not None
        ]
        gpus = []
        by_gpu = _by_gpu(rows)
        for model in self.gpus:
            mine = by_gpu.get((model.node, model.index), [])
            queue = {"none": sum(row.phase == "queued" for row in mine)}
            for row in mine:
                if row.phase == "released" and row.slice_index is not None:
                    kind = gres_type(model.gpu, model.configuration.slices[row.slice_index].profile)
                    queue[kind] = queue.get(kind, 0) + 1
            reading = self.store.reading(model.node, model.index)
            gpus.append(
                GpuMetrics(
                    model.node,
                    model.index,
                    model.gpu.name,
                    self._power_w.get(model.name),
                    (reading.counter_mj - reading.first_mj) / 1000.0 if reading is not None else None,
                    queue,
                    sum(row.phase in ON_SLICE for row in mine),
                    model.repartition.phase if model.repartition is not None else None,
                )
            )
        jobs = [
            JobMetrics(row.job_id, row.user or "", row.node, row.gpu, row.energy_mj / 1000.0)
            for row in rows
            if row.node is not None and row.gpu is not None
        ]
        managed = {node.name for node in self.config.nodes}
        down = {name: _powered_down(node) for name, node in self._slurm_nodes().items() if name in managed}
        return MetricsView(now, gpus, jobs, dict(self.decisions), dict(self.repartition_phases), down)

    # ------------------------------------------------------------------ actions and recovery
    def _checkpoint(self, row: JobRow, now: float, what: str) -> bool:
        """Send a running job the checkpoint signal (journaled; it is requeued ``grace_s`` later) and log
        ``what``; whether Slurm took the signal."""
        if not self._act(
            row.job_id, "signal", {"signal": self.config.signal}, now, row, phase="signalled", signalled_s=now
        ):
            return False
        self._log(now, f"{what}: signal {self.config.signal}, requeue in {self.config.grace_s:g} s")
        return True

    def _act(
        self,
        job_id: int,
        kind: str,
        args: dict[str, str],
        now: float,
        row: JobRow | None = None,
        **changes: object,
    ) -> bool:
        """Journal an action, send it, then mark it done and apply ``changes`` to ``row`` in one transaction;
        ``False`` (and ``row`` unchanged) if Slurm refused it. A dry run only logs it (and applies the changes
        in memory)."""
        after = replace(row, **changes) if row is not None else None  # type: ignore[arg-type]
        if self.dry_run:
            log.info("dry run: would %s job %d %s", kind, job_id, args or "")
        else:
            journaled = dict(args, _after=asdict(after)) if after is not None else args
            action = self.store.journal(job_id, kind, journaled, now)
            try:
                self._send(job_id, kind, args)
            except WattschedError as exc:
                # A running job's energy comment races its end (Slurm refuses it then): not worth a warning.
                level = logging.DEBUG if kind == "admin_comment" else logging.WARNING
                log.log(level, "%s of job %d failed: %s", kind, job_id, exc)
                self.store.finish_action(action, "failed")
                return False
            with self.store.transaction():
                self.store.finish_action(action)
                if after is not None:
                    self.store.put_job(after)
        if row is not None and after is not None:
            row.__dict__.update(after.__dict__)
            if self.dry_run:
                self.store.put_job(row)
        self.decisions[kind] += 1
        return True

    def _send(self, job_id: int, kind: str, args: dict[str, str]) -> None:
        if kind == "release":
            self.slurm.set_gres(job_id, args["gres"], args["node"])
            self.slurm.release(job_id)
        elif kind == "hold":
            self.slurm.hold(job_id)
        elif kind == "hold_with_reason":
            self.slurm.hold_with_reason(job_id, args["reason"])
        elif kind == "signal":
            self.slurm.signal(job_id, args["signal"])
        elif kind == "requeue_hold":
            self.slurm.requeue_hold(job_id)
        elif kind == "admin_comment":
            self.slurm.set_admin_comment(job_id, args["text"])
        elif kind == "power_up":
            self.slurm.power_up(args["node"])
        else:
            raise ValueError(f"unknown action {kind!r}")

    def _recover(self, now: float) -> None:
        """Reconcile the journal's pending actions with Slurm, then rebuild each GPU's model."""
        for action in self.store.pending_actions():
            if self.clocks.recover(action) or self.accounting.recover(action):
                continue
            if action.kind == "renew":
                self._recover_renewal(action, now)
                continue
            if action.kind == "power_up":  # the pass asks again while the node is still off
                self.store.finish_action(action.id, "done")
                continue
            job = self.slurm.job(action.job_id)
            if job is None or (job.state.finished and action.kind != "admin_comment"):
                self.store.finish_action(action.id, "done")  # nothing left to do; the pass sees it ended
                continue
            done = {
                "release": not job.held,
                "hold": job.held or job.state != JobState.PENDING,
                "hold_with_reason": job.held,
                "requeue_hold": job.state == JobState.PENDING,
                "signal": job.state != JobState.RUNNING,
                "admin_comment": False,
            }[action.kind]
            if not done:
                try:
                    self._send(
                        action.job_id,
                        action.kind,
                        {k: v for k, v in action.args.items() if not k.startswith("_")},
                    )
                except WattschedError as exc:
                    log.warning("redo of %s of job %d failed: %s", action.kind, action.job_id, exc)
                    self.store.finish_action(action.id, "failed")
                    continue
            with self.store.transaction():
                self.store.finish_action(action.id, "done")
                if "_after" in action.args:
                    self.store.put_job(JobRow(**action.args["_after"]))
            log.info(
                "recovered %s of job %d (%s)", action.kind, action.job_id, "done" if done else "sent again"
            )
        self._rebuild(now)
        for model in self.gpus:
            last = self.store.last_repartition(model.node, model.index)
            if last is not None and last.phase == "failed" and last.in_force == last.from_config:
                self._check_missing(model, now)

    def _check_missing(self, model: GpuModel, now: float) -> None:
        """Hold the slices of the configuration in force that the GPU lacks (after a repartition whose roll
        back it refused), and reopen them once they are there again (an operator mended the GPU)."""
        try:
            layout, _ = current_layout(self._backend(model.node), model.index)
        except (GpuError, ConfigError, WattschedError) as exc:
            log.warning("%s: cannot read the GPU's MIG layout: %s", model.name, exc)
            return
        present = {str(instance) for instance in layout}
        missing = frozenset(i for i, label in enumerate(model.labels) if label not in present)
        if missing != model.missing:
            if missing:
                names = ", ".join(model.labels[i] for i in sorted(missing))
                self._log(now, f"{model.name}: slices {names} are not on the GPU; they take no job")
            else:
                self._log(
                    now, f"{model.name}: every slice of configuration {model.configuration.ident} is back"
                )
            model.missing = missing

    def _rebuild(self, now: float) -> None:
        """Every active job into its GPU's model at ``now``: waiting ones arrive, running ones start on their
        slice with the work they have left."""
        self._rows = {row.job_id: row for row in self.store.jobs(ACTIVE)}
        rows = sorted(self._rows.values(), key=lambda r: (r.submit_s or 0.0, r.job_id))
        for row in rows:
            for model, _ in self._homes(row):
                if row.gpus > 1:
                    model.gang = row.job_id  # reserved
                    if row.phase == "queued":
                        continue  # not released yet: it reaches the models when it is
                if row.job_id not in model.ranks and row.phase != "booting":
                    self._add_to_model(model, row, now)
        for model in self.gpus:
            model.sim.decide(self._rel(now))
        for row in rows:
            if row.phase not in ON_SLICE:
                continue
            for model, slice_index in self._homes(row):
                if slice_index is not None:
                    model.sim.observe_start(
                        model.ranks[row.job_id],
                        slice_index,
                        self._rel(now),
                        remaining=self._remaining_at(model, row, now),
                    )

    def _homes(self, row: JobRow) -> list[tuple[GpuModel, int | None]]:
        """The GPUs (models) a job is placed on with its slice on each: its GPU, or a gang's reserved ones."""
        if row.gpus > 1:
            members = parse_members(row.members).items()
            found = [(self._by_name.get(f"{row.node}/{gpu}"), s) for gpu, s in members]
        else:
            found = [(self._by_name.get(f"{row.node}/{row.gpu}"), row.slice_index)]
        return [(model, s) for model, s in found if model is not None]

    def _rel(self, epoch_s: float) -> float:
        return epoch_s - self.origin_s

    def _new_sim(
        self, node: NodeConfig, index: int, configuration: Configuration | None = None
    ) -> MigSimulation:
        sim = MigSimulation(
            [],
            configuration if configuration is not None else node.configurations[index],
            self.config.policy,
            gpu=node.gpus[index],
            clock=self.clocks.governor(node.name, index),
        )
        sim.overdue_s = self.config.overdue_s
        return sim

    # ------------------------------------------------------------------ live repartitioning
    def _configuration_in_force(
        self, node: NodeConfig, index: int, gpu: MigGpu
    ) -> tuple[Configuration, Repartition | None]:
        """The configuration the GPU's jobs refer to (the config file's, or the last repartition's) and the
        repartition still under way, if any."""
        last = self.store.last_repartition(node.name, index)
        if last is None:
            return node.configurations[index], None
        return gpu.configuration(_ident(last.in_force)), (last if last.open else None)

    def _partitioner(
        self, node: NodeConfig, index: int, gpu: MigGpu, given: dict[str, RepartitionPolicy] | None
    ) -> RepartitionPolicy | None:
        name = f"{node.name}/{index}"
        if given is not None and name in given:
            chosen = given[name]
        elif node.dynamic:
            chosen = PARTITIONERS.make(node.partitioner, **dict(node.partitioner_options))
        else:
            return None
        chosen.reset(gpu, index)
        return chosen

    def _ask_partitioner(self, model: GpuModel, now: float, report: PassReport) -> None:
        """At a decision epoch of the GPU: its partitioner's configuration, a repartition when it differs.
        Asked on the model brought to now (the jobs that arrived in the pass with all their work, each running
        one with the work it has left), as the simulator asks at an epoch, and before the pass gives jobs
        slices: a job that arrived in the pass is never released onto a slice the change then drains (Slurm
        could start it before the hold), it waits for the new layout as in the simulator's blackout."""
        assert model.partitioner is not None
        model.sim.decide(self._rel(now))
        choice = model.partitioner.decide(model.sim.snapshot())
        try:
            target = model.gpu.configuration(choice)
        except ConfigError as exc:
            log.warning(
                "%s: partitioner %s chose %r: %s; kept", model.name, model.partitioner.name, choice, exc
            )
            return
        if target == model.configuration:
            return
        if any(g.repartition is not None or g.gang is not None for g in self.gpus if g.node == model.node):
            return  # one repartition of a node at a time (device indices are numbered node-wide), none
            # while a multi-GPU job holds GPUs there (its devices must keep their indices)
        if not target.mig_enabled:
            log.warning("%s: partitioner chose no-mig; wattsched never changes MIG mode; kept", model.name)
            return
        if self.dry_run:
            self._log(now, f"{model.name}: would repartition {model.configuration.ident} -> {target.ident}")
            return
        entry = self.store.add_repartition(
            model.node,
            model.index,
            (str(model.configuration.ident), str(target.ident)),
            (_layout(model.configuration), _layout(target)),
            now,
        )
        model.repartition = entry
        self._hold(model, target)
        held = [
            f"{peer.name} {peer.labels[s]}"
            for peer in self.gpus
            if peer.node == model.node
            for s in sorted(model.held.get(peer.index, ()))
        ]
        self._log(
            now,
            f"repartition {entry.id} of {model.name}: configuration {entry.from_config} -> {entry.to_config} "
            f"({entry.from_layout} -> {entry.to_layout}); draining {', '.join(held) or 'nothing'}",
        )
        report.repartitions.append((model.name, "drain"))

    def _hold(self, model: GpuModel, target: Configuration) -> None:
        """The slices that take no job while ``model`` goes to ``target``: those the plan destroys, and, on
        every GPU of the node, kept ones whose Slurm device index the change moves (Slurm numbers
        a node's devices type by type: :func:`~wattsched.slurm.gres_update.device_order`) — a running job's
        allocation names its device by index, so it must end before Slurm sees the new numbering."""
        peers = sorted((g for g in self.gpus if g.node == model.node), key=lambda g: g.index)
        new_labels = [s.label for s in target.slices]
        old = device_order([(g.gpu, g.labels) for g in peers], per_gpu=model.per_gpu)
        new = device_order(
            [(g.gpu, new_labels if g is model else g.labels) for g in peers], per_gpu=model.per_gpu
        )
        new_at = {key: n for n, key in enumerate(new)}
        held: dict[int, set[int]] = {g.index: set() for g in peers}
        held[model.index].update(destroyed_slices(model.configuration, target))
        for n, key in enumerate(old):
            if key in new_at and new_at[key] != n:
                peer = next(g for g in peers if g.index == key[0])
                held[key[0]].add(peer.labels.index(key[1]))
        model.held = {index: frozenset(found) for index, found in held.items() if found}
        for peer in peers:
            peer.draining = model.held.get(peer.index, frozenset())

    def _release_hold(self, model: GpuModel) -> None:
        for peer in self.gpus:
            if peer.node == model.node:
                peer.draining = frozenset()
        model.held = {}

    def _enter(self, model: GpuModel, entry: Repartition, phase: str, now: float, report: PassReport) -> None:
        """Close ``entry``'s phase (its seconds recorded, by the clock now: phases of one pass take their own
        time) and write the next one before its work is done."""
        at = max(now, self.clock())
        entry.phase_s[entry.phase] = round(
            entry.phase_s.get(entry.phase, 0.0) + at - entry.phase_started_s, 6
        )
        entry.phase, entry.phase_started_s = phase, at
        if phase not in OPEN_PHASES:
            entry.finished_s = at
        self.store.put_repartition(entry)
        report.repartitions.append((model.name, phase))

    def _step_repartition(self, model: GpuModel, now: float, report: PassReport) -> None:
        """Carry the GPU's repartition on as far as it can go in this pass."""
        entry = model.repartition
        assert entry is not None
        target = model.gpu.configuration(_ident(entry.to_config))
        settings = self.config.repartition
        if entry.phase == "drain":
            self._enter(model, entry, "wait", now, report)
        if entry.phase == "wait":
            destroyed = set(destroyed_slices(model.configuration, target))
            held_rows = [
                row
                for row in self._rows.values()
                if row.node == model.node
                and row.gpu is not None
                and row.slice_index in model.held.get(row.gpu, ())
            ]
            for row in held_rows:  # released there but not started yet: held back, it waits for a slice
                if row.phase == "released":
                    self._act(row.job_id, "hold", {}, now, row, phase="queued")
            on = [row for row in held_rows if row.phase in ON_SLICE]
            for row in on:
                if row.job_id not in entry.waited:
                    entry.waited.append(row.job_id)
                if (
                    row.gpu == model.index
                    and row.slice_index in destroyed
                    and self._requeue_for_repartition(model, row, entry)
                    and self.config.preemption
                    and row.preemptible
                    and row.phase == "running"
                    and self._checkpoint(
                        row, now, f"job {row.job_id} preempted on {model.name} for repartition {entry.id}"
                    )
                ):
                    entry.requeued.append(row.job_id)
                    report.preempted.append(row.job_id)
            self.store.put_repartition(entry)
            if on:
                if now - entry.phase_started_s > settings.max_wait_s:
                    jobs = ", ".join(str(r.job_id) for r in on)
                    entry.detail = f"jobs {jobs} still on the slices after {settings.max_wait_s:g} s"
                    self._close(model, entry, "rolled_back", now, report)
                return
            self._enter(model, entry, "apply", now, report)
        if entry.phase == "apply":
            try:
                before, after = carry_out(self._backend(model.node), model.index, model.gpu, target)
            except (GpuError, ConfigError) as exc:
                entry.attempts += 1
                entry.detail = " ".join(str(exc).split())
                self.store.put_repartition(entry)
                log.warning(
                    "repartition %d of %s: MIG change refused (try %d of %d): %s",
                    entry.id,
                    model.name,
                    entry.attempts,
                    settings.max_attempts,
                    entry.detail,
                )
                if entry.attempts >= settings.max_attempts:
                    self._roll_back(model, entry, now, report)
                return
            log.info("repartition %d of %s: GPU %s -> %s", entry.id, model.name, before, after)
            self._enter(model, entry, "gres", now, report)
        if entry.phase == "gres":
            if settings.reload_command:
                try:
                    run_reload(settings.reload_command, model.node, settings.reload_timeout_s)
                except ReloadError as exc:
                    entry.reload_attempts += 1
                    entry.detail = str(exc)
                    self.store.put_repartition(entry)
                    log.warning(
                        "repartition %d of %s: %s (try %d)", entry.id, model.name, exc, entry.reload_attempts
                    )
                    if entry.reload_attempts >= settings.max_attempts:
                        self._close(model, entry, "failed", now, report)
                    return
            self._refresh_uuids(model.node)
            self._enter(model, entry, "resume", now, report)
        if entry.phase == "resume":
            self._resume(model, entry, target, now, report)

    def _requeue_for_repartition(self, model: GpuModel, row: JobRow, entry: Repartition) -> bool:
        """Whether a (preemptible, running) job on a slice the repartition destroys is requeued rather than
        waited for: always, never, or with ``requeue = "auto"`` when the GPU's model predicts it to end after
        ``max_wait_s`` of waiting — the change would be given up before it ends."""
        settings = self.config.repartition
        if settings.requeue != "auto":
            return settings.requeue
        rank = model.ranks.get(row.job_id)
        end = model.sim.predicted_completions().get(rank) if rank is not None else None
        if end is None:
            return False
        return end + self.origin_s > entry.phase_started_s + settings.max_wait_s

    def _resume(
        self, model: GpuModel, entry: Repartition, target: Configuration, now: float, report: PassReport
    ) -> None:
        """The GPU's model on the new configuration: its active jobs renumbered onto the new slices (a running
        job keeps its slice, which the plan kept), in one transaction with the repartition's end."""
        labels = [s.label for s in target.slices]
        rows = [r for r in self._rows.values() if r.node == model.node and r.gpu == model.index]
        for row in rows:
            if row.slice is not None and row.slice in labels:
                row.slice_index = labels.index(row.slice)
            elif row.phase == "released" or row.phase in ON_SLICE:
                row.slice_index = None  # cannot happen once drained; the pass re-reads it
        self._install(model, target, now)
        with self.store.transaction():  # a crash before this commit does the resume again (idempotent)
            for row in rows:
                self.store.put_job(row)
            self._enter(model, entry, "done", now, report)
        spent = ", ".join(f"{phase} {seconds:.2f} s" for phase, seconds in entry.phase_s.items())
        self._log(
            now,
            f"repartition {entry.id} of {model.name} done in {entry.phase_started_s - entry.started_s:.2f} s "
            f"({spent}); "
            f"waited for jobs {entry.waited or '-'}, requeued {entry.requeued or '-'}",
        )

    def _install(self, model: GpuModel, configuration: Configuration, now: float) -> None:
        """A fresh model of the GPU in ``configuration`` with its active jobs (as a restart builds it)."""
        node = next(n for n in self.config.nodes if n.name == model.node)
        model.configuration = configuration
        model.sim = self._new_sim(node, model.index, configuration)
        model.ranks, model.job_of = {}, {}
        model.repartition = None
        self._release_hold(model)
        rows = sorted(
            (r for r in self._rows.values() if r.node == model.node and r.gpu == model.index),
            key=lambda r: (r.submit_s or 0.0, r.job_id),
        )
        for row in rows:
            self._add_to_model(model, row, now)
        model.sim.decide(self._rel(now))
        for row in rows:
            if row.phase in ON_SLICE and row.slice_index is not None:
                model.sim.observe_start(
                    model.ranks[row.job_id],
                    row.slice_index,
                    self._rel(now),
                    remaining=self._remaining_at(model, row, now),
                )

    def _roll_back(self, model: GpuModel, entry: Repartition, now: float, report: PassReport) -> None:
        """Give the repartition up: the GPU back to the old layout (the instances the tries destroyed made
        again), the drained slices open again. A remade instance is a new device (a new MIG UUID): then the
        reload command runs once, for Slurm to see the GPU's devices again (its GRES types do not change)."""
        old = model.configuration
        settings = self.config.repartition
        try:
            before, after = carry_out(self._backend(model.node), model.index, model.gpu, old)
            if before != after and settings.reload_command:
                try:
                    run_reload(settings.reload_command, model.node, settings.reload_timeout_s)
                except ReloadError as exc:
                    raise ReloadError(f"Slurm not told of the instances made again: {exc}") from None
                self._refresh_uuids(model.node)
        except (GpuError, ConfigError, ReloadError) as exc:
            entry.detail += f"; roll back failed: {' '.join(str(exc).split())}"
            self._close(model, entry, "failed", now, report)
            log.error("repartition %d of %s: %s", entry.id, model.name, entry.detail)
            return
        self._close(model, entry, "rolled_back", now, report)

    def _close(self, model: GpuModel, entry: Repartition, phase: str, now: float, report: PassReport) -> None:
        self._enter(model, entry, phase, now, report)
        model.repartition = None
        self._release_hold(model)
        if phase == "failed" and entry.in_force == entry.to_config:
            self._install(model, model.gpu.configuration(_ident(entry.to_config)), now)
        elif phase == "failed":
            self._check_missing(model, now)
        self._log(now, f"repartition {entry.id} of {model.name} {phase.replace('_', ' ')}: {entry.detail}")

    def _backend(self, node: str) -> GpuBackend:
        if node not in self._backends:
            spec = next(n.backend for n in self.config.nodes if n.name == node)
            self._backends[node] = open_gpu_backend(spec)
        return self._backends[node]

    def _refresh_uuids(self, node: str) -> None:
        """A client that maps device indices to UUIDs learns the node's new devices."""
        known = getattr(self.slurm, "gpu_uuids", None)
        uuids = device_uuids(self.config.slurm_conf, node)
        if isinstance(known, dict) and uuids is not None:
            known[node] = tuple(uuids)

    def _log(self, now: float, text: str) -> None:
        log.info("%s", text)
        if not self.dry_run:
            self.store.log_decision(now, text)


def _powered_down(node: SlurmNode) -> bool:
    """Whether Slurm reports the node off or turning off (one that is booting counts as on)."""
    return bool(POWERED_DOWN_FLAGS.intersection(node.state_flags)) and "POWERING_UP" not in node.state_flags


def _by_gpu(rows: Iterable[JobRow]) -> dict[tuple[str | None, int | None], list[JobRow]]:
    """The single-GPU jobs' rows by the (node, GPU) they were placed on, each GPU's in their order in
    ``rows``: one scan, where filtering ``rows`` for every GPU would cost jobs x GPUs a pass
    (benchmarks/bench_slurm.py --scale)."""
    grouped: dict[tuple[str | None, int | None], list[JobRow]] = {}
    for row in rows:
        if row.gpus == 1:  # a gang's GPUs are followed apart (Controller._step_gangs)
            grouped.setdefault((row.node, row.gpu), []).append(row)
    return grouped


def _ident(text: str) -> int | str:
    """A configuration id as the state file writes it (``"3"``, ``"no-mig"``)."""
    return int(text) if text.isdigit() else text


def _layout(configuration: Configuration) -> str:
    return ",".join(s.label for s in sorted(configuration.slices, key=lambda s: s.start)) or "empty"


def _ends(job: SlurmJob | None) -> bool:
    return job is None or job.state.finished


def _event_time(row: JobRow, job: SlurmJob | None, now: float) -> float:
    """When what a pass sees of a job happened: its end, its start, or now."""
    if job is None:
        return now
    if job.state.finished and job.end_s is not None and math.isfinite(job.end_s):
        return job.end_s
    if job.state == JobState.RUNNING and row.phase in ("queued", "released") and job.start_s is not None:
        return job.start_s
    return now
