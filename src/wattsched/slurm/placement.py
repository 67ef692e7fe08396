"""Which GPU a new job goes to, live: the data-centre simulator's placements, shown the controller's GPUs.

A placement (:data:`~wattsched.cluster.placement.PLACEMENTS`, plug-ins included) sees a
:class:`~wattsched.cluster.placement.GpuPool`: the GPUs that can start a job now with the compute sizes of
their idle slices, each GPU's busy state (for marginal energy) and, for ``fewest-jobs``, each GPU's jobs.
:func:`live_pool` builds that pool from what the controller knows, one :class:`LiveGpu` per GPU in
configuration order (node by node, NVML index order), as the cluster engine builds it from its GPUs:

* a GPU's model (its :class:`~wattsched.mig.MigSimulation`, brought to now) gives its busy state, its jobs
  (waiting, released or running) and the job on each slice — the engine's view of a simulated GPU;
* a slice that takes no job now (drained for a repartition, missing from the GPU) is not idle;
* a GPU of a node Slurm reports powered down (or powering down) is not available, as a GPU of an off server
  in the engine; one of a booting node (powering up) is, unless jobs already wait there for the boot (the
  engine's held jobs), and those count among its jobs; a GPU with an arrival its model has not handled yet
  is not offered again (the engine's rule for arrivals at one instant: :class:`LivePlacement` closes a GPU
  once it is given a job);
* a GPU of a node Slurm reports down or failed takes no job, not even from the fallback (unless every node
  is so);
* a GPU a multi-GPU job has reserved (:mod:`wattsched.slurm.gangs`) takes no job either; where every GPU
  that could is so, the job waits at the cluster until a gang ends (:meth:`LivePlacement.choose` gives -1),
  as in the engine.

When the placement finds no GPU (-1), the engine's fallback decides: the first powered-down node (Slurm
resumes it for the job, as the engine boots an off server), else the GPU with the fewest jobs among the nodes
that are up, lowest index on ties.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from wattsched.cluster.placement import PLACEMENTS, GpuPool, PlacementPolicy
from wattsched.hardware.mig import MigGpu
from wattsched.mig.simulator import MigSimulation
from wattsched.workload.job import Job

__all__ = ["POWERED_DOWN_FLAGS", "LiveGpu", "LivePlacement", "live_pool"]

#: Slurm node state flags of a node that is off or turning off (``POWERING_UP``: booting, counted as on).
POWERED_DOWN_FLAGS = frozenset({"POWERED_DOWN", "POWERING_DOWN"})


@dataclass(frozen=True)
class LiveGpu:
    """One GPU as the controller knows it when a job arrives."""

    node: str
    #: The GPU's model, brought to now (every observation told, its decision at now taken).
    sim: MigSimulation
    #: The model's job rank on each slice of its configuration now (-1: idle).
    assignment: Sequence[int]
    #: Slices that take no job now (drained for a repartition, missing from the GPU).
    closed: frozenset[int] = frozenset()
    #: Whether Slurm reports its node powered down (``False`` where not known).
    powered_down: bool = False
    #: Jobs placed on it that wait for its node to be turned on (not in its model yet).
    waiting: int = 0
    #: Whether Slurm reports its node down or failed (a resume that never came back): no job goes there.
    offline: bool = False
    #: Whether a multi-GPU job has reserved it: no other job goes there.
    gang: bool = False


def live_pool(gpus: Sequence[LiveGpu], *, classes: bool = True) -> GpuPool:
    """The pool a placement sees (module docstring); ``classes``: keep ``by_class`` (placements that read
    only ``by_size`` need not)."""
    distinct: list[MigGpu] = []
    model_of = []
    for gpu in gpus:
        if gpu.sim.gpu not in distinct:
            distinct.append(gpu.sim.gpu)
        model_of.append(distinct.index(gpu.sim.gpu))
    pool = GpuPool(distinct, model_of, classes=classes)
    for index, gpu in enumerate(gpus):
        sim = gpu.sim
        _, _, in_system, pending, state, _ = sim.probe(sim.now_s)
        pool.jobs[index] = in_system + gpu.waiting
        if gpu.powered_down or gpu.offline or gpu.gang or gpu.waiting or pending:
            continue
        slices = sim.configuration.slices
        free = 0
        for s, rank in enumerate(gpu.assignment):
            if rank < 0 and s not in gpu.closed:
                free |= 1 << slices[s].compute
        if free:
            pool.update(index, state, free)
    return pool


class LivePlacement:
    """The placement of one pass's new jobs: the pool built once (:func:`live_pool`), each GPU given a job
    then closed for the rest of the pass with one more job (its arrival is handled at the next decision)."""

    def __init__(self, placement: str | PlacementPolicy, gpus: Sequence[LiveGpu]) -> None:
        self.policy = PLACEMENTS.make(placement) if isinstance(placement, str) else placement
        self.gpus = list(gpus)
        self.pool = live_pool(self.gpus, classes=getattr(self.policy, "uses_classes", True))
        #: How many jobs the placement left to the fallback (no GPU suited them).
        self.fallbacks = 0
        # The fallback's candidates, fixed for the pass: the first powered-down node's GPUs, else a heap of
        # (jobs, index) over every GPU (a job arriving when every GPU is closed costs log GPUs, not GPUs).
        down = [i for i, gpu in enumerate(self.gpus) if gpu.powered_down and not gpu.offline and not gpu.gang]
        self._first_down = [i for i in down if self.gpus[i].node == self.gpus[down[0]].node] if down else []
        online = [i for i, gpu in enumerate(self.gpus) if not gpu.offline and not gpu.gang]
        if not online and not any(gpu.gang for gpu in self.gpus):
            online = list(range(len(self.gpus)))  # every node down: the least-loaded GPU all the same
        self._least_loaded = [(self.pool.jobs[i], i) for i in online]
        heapq.heapify(self._least_loaded)

    def choose(self, job: Job, now_s: float) -> int:
        """The index (in :attr:`gpus`) of the GPU for ``job``, arriving at ``now_s`` (the models' time); -1
        when every GPU that could take it is a gang's (the job waits at the cluster)."""
        index = self.policy.choose(job, now_s, self.pool)
        if 0 <= index < len(self.gpus) and self.gpus[index].gang:
            index = -1  # a gang holds it (only a placement that looks beyond the pool can choose it)
        if not 0 <= index < len(self.gpus):
            index = self._fallback()
            self.fallbacks += 1
            if index < 0:
                return -1
        self.pool.jobs[index] += 1
        if self.pool.available(index):
            self.pool.update(index, 0, 0)
        return index

    def _fallback(self) -> int:
        """The engine's: the first powered-down node's least-loaded GPU, else the least-loaded GPU of a node
        that is up (lowest index on ties)."""
        jobs = self.pool.jobs
        if self._first_down:
            return min(self._first_down, key=lambda i: (jobs[i], i))
        heap = self._least_loaded
        if not heap:
            return -1
        while heap[0][0] != jobs[heap[0][1]]:  # a count that grew since it was pushed: push it anew
            heapq.heapreplace(heap, (jobs[heap[0][1]], heap[0][1]))
        return heap[0][1]
