"""The cluster engine: one :class:`~wattsched.mig.MigSimulation` per GPU, driven in one global time order.

There is no second copy of the scheduling logic: every GPU is the one-GPU engine, given its jobs as they are
placed (``add_job``) and stepped instant by instant (``step``). The driver keeps

* the jobs, in arrival order (a list, or any iterable already sorted by arrival: long workloads stream);
* a heap of each GPU's next instant. Before a job arriving at ``t`` is placed, every GPU processes exactly
  the instants the one-GPU engine would process before that arrival joins an instant (those starting more
  than :data:`~wattsched.mig.simulator.EPS_S` before ``t``), so a cluster of one GPU is ``simulate`` bit for
  bit, whatever the placement;
* a heap of cluster events: server turn-offs (power states) and boots finishing; at equal times they come
  before job arrivals (P2 Alg. 4: DRS first, then the slot's arrivals);
* the :class:`~wattsched.cluster.placement.GpuPool` of GPUs that can start a job now, refreshed after every
  instant of a GPU.

A job goes where the placement policy says; when no available GPU suits it, to the first off server (which
boots, power states on) or else to the GPU with the fewest jobs (lowest index on ties). Jobs placed on a
booting server wait at the cluster and reach their GPU, arriving, when the boot ends. Each GPU's partitioner
decides at that GPU's decision epochs (:func:`wattsched.mig.partition.runner.decide_epoch`), exactly as in
:func:`wattsched.mig.partition.run_day`.

A job of several GPUs (``Job.gpus > 1``) runs as a gang on whole GPUs of one server, all started and ended
together (:mod:`wattsched.cluster.gangs`); a run without such jobs never touches that code.
"""

from __future__ import annotations

import heapq
import logging
import math
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import pairwise

import numpy as np

from wattsched.cluster.clocks import clock_schedule
from wattsched.cluster.gangs import Gang, choose_members
from wattsched.cluster.placement import PLACEMENTS, GpuPool
from wattsched.cluster.result import ClusterJobRecord, ClusterResult
from wattsched.cluster.servers import BOOT_DONE, OFF, ON, ServerStates
from wattsched.cluster.spec import ClusterOptions, ClusterSpec
from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition import PARTITIONERS, RepartitionPolicy, StaticPartitioner
from wattsched.mig.partition.runner import decide_epoch
from wattsched.mig.results import warn_unfinished
from wattsched.mig.simulator import EPS_S, MigSimulation
from wattsched.workload.job import Job

__all__ = ["ClusterSimulation", "simulate_cluster"]

log = logging.getLogger(__name__)


class _Gpu:
    __slots__ = (
        "certain",
        "clock",
        "compacted",
        "gang",
        "given",
        "held",
        "index",
        "load",
        "model",
        "next_s",
        "partitioner",
        "rows",
        "server",
        "sim",
    )

    def __init__(
        self,
        index: int,
        server: int,
        model: int,
        sim: MigSimulation,
        partitioner: RepartitionPolicy | None,
        clock: tuple[int, ...],
    ) -> None:
        self.index = index
        self.server = server
        self.model = model
        self.sim = sim
        self.partitioner = partitioner  # None: a fixed configuration, never consulted
        self.next_s = math.inf
        self.certain = True  # whether next_s is a live event's (else a stale one's: look again)
        self.load = 0  # jobs given and not completed, plus jobs held for a boot
        self.held: list[Job] = []
        self.rows: array[int] = array("q")  # global job index of each job given, in order
        self.compacted = 0  # completed jobs when last compacted
        self.given = 0  # jobs placed on this GPU (held ones included)
        self.clock = clock
        self.gang: Gang | None = None  # the gang that holds this GPU (reserved or running)


class ClusterSimulation:
    """One cluster run; see the module docstring. ``run(jobs)`` once, then read the result."""

    def __init__(
        self, spec: ClusterSpec, options: ClusterOptions | None = None, *, horizon_s: float | None = None
    ) -> None:
        options = options or ClusterOptions()
        if horizon_s is not None and not (math.isfinite(horizon_s) and horizon_s >= 0):
            raise ConfigError(f"horizon_s must be a finite number >= 0, got {horizon_s!r}")
        self._spec = spec
        self._options = options
        self._horizon_s = horizon_s
        self._placement = PLACEMENTS.make(options.placement)
        self._compact_every = options.compact_every
        models = _with_repartition_s(spec.gpu_models(), options.repartition_s)
        distinct: list[MigGpu] = []
        model_of = []
        for gpu in models:
            if gpu not in distinct:
                distinct.append(gpu)
            model_of.append(distinct.index(gpu))
        self._models = distinct
        self._idle_w = [gpu.power.table(None).power_w[0] for gpu in distinct]
        self._pool = GpuPool(distinct, model_of, classes=getattr(self._placement, "uses_classes", True))
        self._signature = self._pool.signature  # read-only here: what the pool holds per GPU
        # Each GPU's jobs, written into the pool only for a placement that reads them (a store per change).
        self._jobs = self._pool.jobs if getattr(self._placement, "uses_jobs", False) else None
        seeds = np.random.SeedSequence(options.seed).spawn(len(models))
        schedules = {id(gpu): clock_schedule(gpu) if options.clocks else None for gpu in distinct}
        self._gpus: list[_Gpu] = []
        for index, (gpu, server) in enumerate(zip(models, spec.server_of_gpu(), strict=True)):
            partitioner = PARTITIONERS.make(options.partitioner, **dict(options.partitioner_options))
            partitioner.reset(gpu, int(seeds[index].generate_state(1)[0]))
            if hasattr(partitioner, "scheduler"):
                partitioner.scheduler = options.policy  # the run's policy replaces the partitioner's default
            start = (
                gpu.configuration(options.configuration).ident
                if options.configuration is not None
                else partitioner.initial_configuration()
            )
            schedule = schedules[id(gpu)]
            sim = MigSimulation(
                [], start, options.policy, gpu=gpu, record_jobs=options.record_jobs, clock=schedule
            )
            fixed = isinstance(partitioner, StaticPartitioner)
            levels = schedule.sm_mhz if schedule is not None else ()
            self._gpus.append(
                _Gpu(index, server, model_of[index], sim, None if fixed else partitioner, levels)
            )
        power = options.power_states
        members = [[g.index for g in self._gpus if g.server == s] for s in range(len(spec.servers))]
        idle_w = [
            sum(self._idle_w[self._gpus[g].model] for g in gpus) + power.host_idle_w for gpus in members
        ]
        self._servers = ServerStates(members, idle_w, power)
        self._gpu_heap: list[tuple[float, int]] = []
        self._load_heap: list[tuple[int, int]] | None = None  # built at the first fallback
        self._fallbacks = 0
        self._placed = 0
        self._result: ClusterResult | None = None
        self._now_s = 0.0  # the driver's time: the last arrival, cluster event or GPU instant taken
        self._gangs: list[Gang] = []  # every gang of the run, in arrival order
        self._waiting: deque[Gang] = deque()  # gangs without GPUs yet
        self._draining: Gang | None = None  # the gang whose reserved GPUs are emptying
        self._parked: list[tuple[Job, int]] = []  # single-GPU jobs that found every GPU held by gangs
        self._members = members
        self._largest_server = max(len(m) for m in members)
        for g in self._gpus:
            self._refresh(g, 0.0)

    # ------------------------------------------------------------------ running
    def run(self, jobs: Iterable[Job], progress: Callable[[int], None] | None = None) -> ClusterResult:
        """Place and simulate ``jobs`` (sorted by arrival unless a sequence, which is sorted by
        (arrival, position) as :func:`~wattsched.mig.simulate` does) and return the result.

        ``progress`` is called with the number of jobs placed so far, every 4,096 jobs and at the end."""
        if self._result is not None:
            raise RuntimeError("a ClusterSimulation runs once")
        stream = _in_arrival_order(jobs)
        position, job = next(stream, (-1, None))
        last_arrival = -math.inf
        servers = self._servers
        events = servers.events  # the server events' heap: its head is the next server event
        inf = math.inf
        while True:
            t_job = job.arrival_s if job is not None else inf
            t_event = events[0][0] if events else inf
            t = t_job if t_job < t_event else t_event
            if t == inf:
                self._advance(t)  # the last instants may still schedule turn-offs
                if not events:
                    break
                continue
            self._advance(t)
            self._now_s = t
            # The GPUs' instants may have scheduled turn-offs before t: the earliest event goes first.
            if events and events[0][0] <= t_job:
                self._handle_event()
            else:
                assert job is not None
                if t_job < last_arrival:
                    raise ConfigError(
                        f"jobs must come in arrival order: job '{job.job_id}' arrives at "
                        f"{t_job} s, after one at {last_arrival} s"
                    )
                last_arrival = t_job
                following_position, following = next(stream, (-1, None))
                t_next = following.arrival_s if following is not None else inf
                if events and events[0][0] < t_next:
                    t_next = events[0][0]
                self._place(job, t_job, position, t_next)
                position, job = following_position, following
                if progress is not None and not self._placed & 4095:
                    progress(self._placed)
        if progress is not None:
            progress(self._placed)
        horizon = self._horizon_s if self._horizon_s is not None else max(last_arrival, 0.0)
        self._result = self._finish(horizon)
        warn_unfinished(self._result.unfinished_jobs, self._result.jobs, "the cluster run", stacklevel=3)
        return self._result

    def _advance(self, t: float) -> None:
        """Process every GPU instant that starts more than EPS_S before ``t`` (the next arrival)."""
        heap = self._gpu_heap
        gpus = self._gpus
        heappop = heapq.heappop
        while heap and heap[0][0] + EPS_S < t:
            h, index = heappop(heap)
            gpu = gpus[index]
            if h != gpu.next_s:
                continue  # superseded
            sim = gpu.sim
            if not gpu.certain:  # the cached time is a stale event's: look again up to t
                live = sim.next_event_s(t)
                gpu.certain = sim.next_event_certain
                if live != h:
                    gpu.next_s = live
                    if live < math.inf:
                        heapq.heappush(heap, (live, index))
                    continue
            if sim.step() and gpu.partitioner is not None and not sim.in_blackout:
                decide_epoch(sim, gpu.partitioner)
            self._now_s = h  # a gang this change lets start starts at this instant, not at t
            self._refresh(gpu, t)

    def _refresh(self, gpu: _Gpu, limit: float) -> None:
        """After a GPU changed: its next instant, its load (server idleness), its availability."""
        sim = gpu.sim
        nxt, gpu.certain, in_system, pending, state, free = sim.probe(limit)
        if nxt != gpu.next_s:
            gpu.next_s = nxt
            if nxt < math.inf:
                heapq.heappush(self._gpu_heap, (nxt, gpu.index))
        held = gpu.held
        load = in_system + len(held) if held else in_system
        if load != gpu.load:
            if gpu.load < load and gpu.load:
                gpu.load = load  # more work on a busy GPU: nothing else to note
            else:
                self._set_load(gpu, load)
            if self._jobs is not None:
                self._jobs[gpu.index] = load
        if free and (
            pending or held or gpu.gang is not None or self._servers.servers[gpu.server].state == OFF
        ):
            free = 0  # cannot start a job now (or one is already on its way, or a gang holds it)
        old_state, old_free = self._signature[gpu.index]
        if free != old_free or (free and state != old_state and self._pool.classes):
            self._pool.update(gpu.index, state, free)
        every = self._compact_every
        if every:
            done = gpu.given - in_system - gpu.compacted  # completed since the last compaction
            if done >= every and done >= in_system:  # compaction costs O(jobs in memory): amortised O(1)
                sim.compact(keep=self._options.keep_outcomes)
                gpu.compacted = gpu.given - in_system
        if gpu.gang is not None:
            self._gang_changed(gpu)

    def _set_load(self, gpu: _Gpu, load: int, now_s: float | None = None) -> None:
        """``now_s``: the time of the change (default the GPU's clock, read only when it goes idle)."""
        if gpu.load == 0 and load > 0:
            self._servers.gpu_busy(gpu.server)
        elif gpu.load > 0 and load == 0:
            self._servers.gpu_idle(gpu.server, gpu.sim.now_s if now_s is None else now_s)
        if load < gpu.load and self._load_heap is not None:
            # The least-loaded heap (kept from the first fallback on) learns of decreases now, of increases
            # when it looks.
            heap = self._load_heap
            heapq.heappush(heap, (load, gpu.index))
            if len(heap) > 4 * len(self._gpus) + 64:  # drop superseded entries now and then
                self._load_heap = [(g.load, g.index) for g in self._gpus]
                heapq.heapify(self._load_heap)
        gpu.load = load

    # ------------------------------------------------------------------ placement
    def _place(self, job: Job, t: float, position: int, t_next: float, *, arrive_now: bool = False) -> None:
        """Place ``job`` arriving at ``t``; ``t_next``: when the next job or cluster event comes;
        ``arrive_now``: the job reaches its GPU at ``t`` (after waiting at the cluster)."""
        if job.gpus > 1:
            self._gang_arrives(job, t, position)
            return
        index = self._placement.choose(job, t, self._pool)
        if index >= 0 and self._gpus[index].gang is not None:
            index = -1  # a gang holds it (only a placement that looks beyond the pool can choose it)
        if index < 0:
            index = self._fallback(t)
            self._fallbacks += 1
            if index < 0:  # every GPU is held by a gang: wait for one
                self._parked.append((job, position))
                return
        gpu = self._gpus[index]
        state = self._servers.servers[gpu.server].state
        gpu.rows.append(position)
        gpu.given += 1
        self._placed += 1
        if state != ON:
            if state == OFF:
                self._boot(gpu.server, t)
            gpu.held.append(job)
            self._refresh(gpu, t)
            return
        sim = gpu.sim
        if arrive_now:
            sim.add_job(job, t)
        else:
            sim.add_job(job)
        if t + EPS_S < t_next:
            # No other job can join this arrival's instant: process it now, exactly as _advance would
            # before t_next (saves queueing the GPU and marking it busy in between).
            if gpu.load:
                gpu.load += 1  # more work on a busy GPU: nothing else to note (as _set_load)
            else:
                self._set_load(gpu, 1, t)
            if self._jobs is not None:
                self._jobs[index] = gpu.load
            if sim.step() and gpu.partitioner is not None and not sim.in_blackout:
                decide_epoch(sim, gpu.partitioner)
            self._refresh(gpu, t)
            return
        # What _refresh would find, known without looking: one more job, its arrival pending.
        nxt = sim.next_event_s(t)
        gpu.certain = sim.next_event_certain
        if nxt != gpu.next_s:
            gpu.next_s = nxt
            heapq.heappush(self._gpu_heap, (nxt, index))
        if gpu.load:
            gpu.load += 1
        else:
            self._set_load(gpu, 1, t)
        if self._jobs is not None:
            self._jobs[index] = gpu.load
        if self._signature[index][1]:
            self._pool.update(index, 0, 0)

    def _fallback(self, t: float) -> int:
        """No available GPU suits the job: boot the first off server, else the least-loaded GPU."""
        servers = self._servers
        if servers.power.enabled:
            s = servers.first_off()
            if s >= 0:
                self._boot(s, t)
                return min(
                    servers.servers[s].gpus,
                    key=lambda g: (self._gpus[g].gang is not None, self._gpus[g].load, g),
                )
        if self._load_heap is None:
            self._load_heap = [(g.load, g.index) for g in self._gpus]
            heapq.heapify(self._load_heap)
        heap = self._load_heap
        while heap:
            load, index = heap[0]
            gpu = self._gpus[index]
            on = servers.state(gpu.server) != OFF and gpu.gang is None  # a gang's GPU: pushed back later
            if load == gpu.load and on:
                return index
            heapq.heappop(heap)
            if load < gpu.load and on:
                heapq.heappush(heap, (gpu.load, index))  # an increase it had not seen
        # Every entry was stale (cannot happen with a server on); take the minimum directly.
        candidates = [g for g in self._gpus if servers.state(g.server) != OFF and g.gang is None]
        return min(candidates, key=lambda g: (g.load, g.index)).index if candidates else -1

    # ------------------------------------------------------------------ gangs
    def _gang_arrives(self, job: Job, t: float, position: int) -> None:
        if job.gpus > self._largest_server:
            raise ConfigError(
                f"job '{job.job_id}' needs {job.gpus} GPUs at once; the largest server has "
                f"{self._largest_server}"
            )
        self._placed += 1
        gang = Gang(job, position)
        self._gangs.append(gang)
        self._waiting.append(gang)
        self._reserve_next(t)

    def _reserve_next(self, now_s: float) -> None:
        """The first waiting gang reserves GPUs, unless one is already emptying its reserved GPUs."""
        if self._draining is not None or not self._waiting:
            return
        gang = self._waiting[0]
        gpus = self._gpus
        members = choose_members(
            gang.job.gpus, self._members, [g.load for g in gpus], [g.gang is not None for g in gpus]
        )
        if not members:
            return  # other gangs hold the GPUs: try again when one ends
        self._waiting.popleft()
        self._draining = gang
        gang.members = members
        for m in members:
            gpus[m].gang = gang
        server = gpus[members[0]].server
        if self._servers.state(server) == OFF:
            self._boot(server, now_s)
        for m in members:
            if gang.start_s is None:
                self._refresh(gpus[m], now_s)  # closes it to new jobs; the last one may start the gang

    def _gang_changed(self, gpu: _Gpu) -> None:
        """A GPU a gang holds changed: the gang may start (all its GPUs idle) or a member may have ended."""
        gang = gpu.gang
        assert gang is not None
        gpus = self._gpus
        if gang.start_s is None:
            if any(gpus[m].load for m in gang.members):
                return
            if self._servers.state(gpu.server) != ON:
                return
            self._start_gang(gang)
        elif gpu.load == 0 and gpu.index not in gang.done_s:
            gang.done_s[gpu.index] = gpu.sim.now_s
            if len(gang.done_s) == len(gang.members):
                self._end_gang(gang)

    def _start_gang(self, gang: Gang) -> None:
        gpus = self._gpus
        now_s = max(self._now_s, *(gpus[m].sim.now_s for m in gang.members))
        gang.start_s = now_s
        self._draining = None
        for m in gang.members:
            gpu = gpus[m]
            gpu.rows.append(gang.position)
            gpu.given += 1
            gpu.sim.add_job(gang.job, now_s)
        for m in gang.members:
            self._refresh(gpus[m], now_s)
        self._reserve_next(now_s)

    def _end_gang(self, gang: Gang) -> None:
        gpus = self._gpus
        now_s = gang.end_s
        for m in gang.members:
            gpus[m].gang = None
            if self._load_heap is not None:
                heapq.heappush(self._load_heap, (gpus[m].load, m))
        for m in gang.members:
            self._refresh(gpus[m], now_s)  # open to jobs again
        parked, self._parked = self._parked, []
        for job, position in parked:  # they arrive now, before the next gang reserves GPUs
            self._place(job, now_s, position, now_s, arrive_now=True)
        self._reserve_next(now_s)

    # ------------------------------------------------------------------ power states
    def _handle_event(self) -> None:
        """The next server event; after a boot, the server's held jobs arrive on their GPUs."""
        done = self._servers.pop()
        if done is None:
            return
        when, kind, s = done
        self._now_s = when
        for g in self._servers.servers[s].gpus:
            gpu = self._gpus[g]
            if kind == BOOT_DONE:
                held, gpu.held = gpu.held, []
                for job in held:
                    gpu.sim.add_job(job, when)
                self._refresh(gpu, when)
            else:
                self._pool.update(g, 0, 0)  # turned off: no GPU of it takes work now

    def _boot(self, s: int, t: float) -> None:
        self._servers.boot(s, t)
        for g in self._servers.servers[s].gpus:
            self._refresh(self._gpus[g], t)

    # ------------------------------------------------------------------ results
    def _finish(self, horizon_s: float) -> ClusterResult:
        end_s = max([horizon_s, *(g.sim.now_s for g in self._gpus)])
        for g in self._gpus:
            g.sim.finish(end_s)
        changes = self._servers.close(end_s)
        servers = self._servers.servers
        power = self._options.power_states
        gpu_energy, gpu_jobs = [], []
        run_j = idle_j = 0.0
        tardiness_sum = 0.0
        jobs = late = preemptions = repartitions = 0
        max_tardiness = 0.0
        clock_time: dict[int, float] = {}
        results = []
        for g in self._gpus:
            result = g.sim.result()
            results.append(result)
            off_s = servers[g.server].off_s
            idle_w = self._idle_w[g.model]
            gpu_energy.append(g.sim.energy_j - idle_w * off_s)
            run_j += g.sim.energy_j - idle_w * result.busy_time_s[0]
            idle_j += idle_w * (result.busy_time_s[0] - off_s)
            gpu_jobs.append(result.jobs)
            tardiness_sum += g.sim.total_tardiness_s
            jobs += result.jobs
            late += result.late_jobs
            preemptions += result.preemptions
            repartitions += result.repartitions
            max_tardiness = max(max_tardiness, result.max_tardiness_s)
            for mhz, seconds in zip(g.clock, g.sim.time_by_clock_level(), strict=False):
                clock_time[mhz] = clock_time.get(mhz, 0.0) + seconds
        for gang in self._gangs:  # each GPU counted the gang as its own job: count it once, by its end
            member = gang.member_tardiness_s()
            worst = max(member)
            jobs -= len(member) - 1
            tardiness_sum += worst - sum(member)
            late += (worst > 0) - sum(t > 0 for t in member)
        host_j = power.host_idle_w * sum(end_s - server.off_s for server in servers)
        energy_gpu = sum(gpu_energy)
        return ClusterResult(
            energy_j=energy_gpu + host_j + self._servers.overhead_j,
            energy_gpu_j=energy_gpu,
            energy_run_j=run_j,
            energy_idle_j=idle_j + host_j,
            energy_host_j=host_j,
            energy_overhead_j=self._servers.overhead_j,
            avg_tardiness_s=tardiness_sum / jobs if jobs else 0.0,
            max_tardiness_s=max_tardiness,
            jobs=jobs,
            late_jobs=late,
            preemptions=preemptions,
            repartitions=repartitions,
            blackout_s=sum(result.blackout_s for result in results),
            end_s=end_s,
            gpus=len(self._gpus),
            servers=len(servers),
            server_turn_ons=self._servers.turn_ons,
            fallback_placements=self._fallbacks,
            gpu_energy_j=tuple(gpu_energy),
            gpu_jobs=tuple(gpu_jobs),
            server_off_s=tuple(server.off_s for server in servers),
            server_off_intervals=tuple(sorted(self._servers.off_intervals)),
            gpu_results=tuple(results),
            gpus_on=tuple(changes),
            clock_time_s=clock_time,
            tardiness_s=self._tardiness() if self._options.keep_outcomes else array("d"),
            records=self._records() if self._options.record_jobs else None,
            unfinished_jobs=sum(result.unfinished_jobs for result in results),
        )

    def _tardiness(self) -> array[float]:
        out = array("d", bytes(8 * self._placed))
        for g in self._gpus:
            finished = g.sim.finished_jobs()
            for row, tardiness in zip(finished.rows, finished.tardiness_s, strict=True):
                out[g.rows[row]] = tardiness
        for gang in self._gangs:
            out[gang.position] = max(gang.member_tardiness_s())
        return out

    def _records(self) -> tuple[ClusterJobRecord, ...]:
        out: list[ClusterJobRecord | None] = [None] * self._placed
        for g in self._gpus:
            records = g.sim.result().records or ()
            for row, record in zip(g.rows, records, strict=True):
                out[row] = ClusterJobRecord(g.index, record)
        return tuple(r for r in out if r is not None)


def _with_repartition_s(
    models: list[MigGpu], repartition_s: float | Mapping[str, float] | None
) -> list[MigGpu]:
    """``models`` with the repartition blackout of ``ClusterOptions.repartition_s`` (each model replaced
    once); ConfigError when a model it names is not in the cluster."""
    if repartition_s is None:
        return models
    names = {gpu.name for gpu in models}
    if isinstance(repartition_s, Mapping):
        stray = sorted(set(repartition_s) - names)
        if stray:
            raise ConfigError(
                f"repartition_s names GPU model(s) {', '.join(stray)} that the cluster "
                f"has not; its models: {', '.join(sorted(names))}"
            )
        seconds = dict(repartition_s)
    else:
        seconds = dict.fromkeys(names, repartition_s)
    replaced: dict[int, MigGpu] = {}
    for gpu in models:
        if id(gpu) not in replaced:
            given = seconds.get(gpu.name)
            replaced[id(gpu)] = gpu if given is None else replace(gpu, repartition_s=float(given))
    return [replaced[id(gpu)] for gpu in models]


def _in_arrival_order(jobs: Iterable[Job]) -> Iterator[tuple[int, Job]]:
    """``(position, job)`` in arrival order: a sequence is sorted by (arrival, position) like ``simulate``;
    any other iterable must come sorted."""
    if isinstance(jobs, Sequence):
        arrivals = [j.arrival_s for j in jobs]
        if any(b < a for a, b in pairwise(arrivals)):
            order = sorted(range(len(jobs)), key=lambda i: (arrivals[i], i))
            return ((i, jobs[i]) for i in order)
    return enumerate(jobs)


def simulate_cluster(
    jobs: Iterable[Job],
    spec: ClusterSpec,
    options: ClusterOptions | None = None,
    *,
    horizon_s: float | None = None,
) -> ClusterResult:
    """Simulate ``jobs`` on the cluster ``spec`` (see :class:`~wattsched.cluster.spec.ClusterOptions`).

    Args:
        jobs: a trace (sorted by arrival as ``simulate`` does) or any iterable of jobs in arrival order.
        spec: servers of catalogue GPUs (:meth:`ClusterSpec.homogeneous` for N × G of one GPU).
        options: placement, partitioner, starting configuration, in-configuration policy, power states,
            clocks (default :class:`ClusterOptions`: first-fit, static, restricted EDF-SS, always on).
        horizon_s: end of the arrival window (s); energy runs to ``max(horizon_s, last event)`` on every GPU;
            default the last arrival.

    Returns:
        The :class:`~wattsched.cluster.result.ClusterResult` (energy in J, tardiness in s).
    """
    return ClusterSimulation(spec, options, horizon_s=horizon_s).run(jobs)
