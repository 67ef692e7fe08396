"""Placement: which GPU (and which of its free slices) an arriving job goes to.

A placement policy sees a :class:`GpuPool` — the GPUs that can start a job now (server on or booting, no job
waiting for its arrival to be processed, at least one idle slice), indexed by the compute size of their idle
slices and by (GPU model, busy state, size) — and returns a GPU, or -1 when no available GPU suits it; the
engine then boots an off server (power states on) or gives the job to the least-loaded GPU. The GPU's own
in-configuration policy then places the job on a slice: the placement judges GPUs *by* their free slices,
it does not override the one-GPU scheduler (with EDF-SS, restricted or not, the slice the policy picks on
an idle GPU is the one ``best-fit`` judged by).

Registered policies (:data:`PLACEMENTS`), each O(sizes) or O(busy classes) per job, never O(GPUs), but the
baseline ``fewest-jobs``:

* ``first-fit``: the first GPU (lowest index) with a free slice on which the job meets its deadline; if none,
  the first GPU with any free slice.
* ``best-fit``: the smallest free slice on which the job meets its deadline (first GPU holding one); if none,
  the largest free slice (the job's earliest finish).
* ``least-energy``: the least marginal energy from the GPU's power model, ``(P(u + g·w) − P(u)) · dur_g``
  for a free slice of size ``g`` on a GPU in busy state ``u`` (``w``: the job kind's weight; concave power
  curves favour busy GPUs); ties: smaller slice, then lower GPU.
* ``deadline-aware``: the least marginal energy among free slices on which the job meets its deadline; if
  none, the free slice with the earliest finish.
* ``fewest-jobs``: the GPU with the fewest jobs in its system (given and not completed, free slice or not,
  its server on or off: an off one boots), ties the lowest index: an energy-blind load balancer, the Slurm
  controller's rule before it took placements from this registry. It reads :attr:`GpuPool.jobs`, which the
  engine keeps only for a placement that says ``uses_jobs = True``; O(GPUs) per job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from wattsched.hardware.mig import MigGpu
from wattsched.registry import Registry
from wattsched.workload.job import Job

__all__ = [
    "PLACEMENTS",
    "BestFit",
    "DeadlineAware",
    "FewestJobs",
    "FirstFit",
    "GpuPool",
    "LeastEnergy",
    "PlacementPolicy",
    "lowest_gpu",
]


def lowest_gpu(bits: int) -> int:
    """The lowest GPU index in a bitset (``bits`` > 0)."""
    return (bits & -bits).bit_length() - 1


class GpuPool:
    """The GPUs that can start a job now, as bitsets (see the module docstring); kept by the engine."""

    def __init__(self, models: Sequence[MigGpu], model_of: Sequence[int], *, classes: bool = True) -> None:
        """``classes``: keep :attr:`by_class` too (placements that read only :attr:`by_size` skip it)."""
        self.model_of = list(model_of)
        #: Whether :attr:`by_class` is kept (the placement reads it).
        self.classes = classes
        #: Power table (watts per busy state) and kind weights of each GPU model, for marginal energy.
        self.power_w: list[tuple[float, ...]] = []
        self.kind_weight: list[dict[str, int]] = []
        for gpu in models:
            table = gpu.power.table(None)
            self.power_w.append(table.power_w)
            self.kind_weight.append(dict(table.kind_weight))
        #: size -> GPUs with an idle slice of that compute size.
        self.by_size: dict[int, int] = {}
        #: (model, busy state, size) -> GPUs of that model and state with an idle slice of that size.
        self.by_class: dict[tuple[int, int, int], int] = {}
        self.sizes: list[int] = sorted({g for gpu in models for g in gpu.compute_sizes})
        # :attr:`sizes` as a tuple: a job giving exactly these sizes has its row ready (:meth:`durations`).
        self._size_tuple = tuple(self.sizes)
        #: Per GPU: ``(busy state, bit mask of idle compute sizes)``; mask 0 when unavailable.
        self.signature: list[tuple[int, int]] = [(0, 0)] * len(self.model_of)
        self._marginal: dict[tuple[int, int, int, str], float] = {}
        self._sizes_of: dict[int, tuple[int, ...]] = {}
        #: Each GPU's bit (a big int on a large cluster: built once).
        self._bits = [1 << g for g in range(len(self.model_of))]
        #: Jobs in each GPU's system (given and not completed, held for a boot included); kept only for a
        #: placement with ``uses_jobs = True`` (all zero otherwise).
        self.jobs: list[int] = [0] * len(self.model_of)

    def update(self, gpu: int, state: int, free_mask: int) -> None:
        """GPU ``gpu`` is in busy state ``state`` with idle slices of the compute sizes whose bits are set in
        ``free_mask`` (``1 << size``); 0: it cannot take a job now."""
        old_state, old_mask = self.signature[gpu]
        if free_mask == old_mask and (state == old_state or not free_mask):
            return
        self.signature[gpu] = (state, free_mask)
        bit = self._bits[gpu]
        sizes_of = self._sizes_of
        changed = old_mask ^ free_mask  # only the sizes that appear or disappear move in by_size
        if changed:
            by_size = self.by_size
            for size in sizes_of.get(changed) or self._sizes(changed):
                by_size[size] = by_size.get(size, 0) ^ bit
        if not self.classes:
            return
        model = self.model_of[gpu]
        by_class = self.by_class
        for size in sizes_of.get(old_mask) or self._sizes(old_mask):
            key = (model, old_state, size)
            left = by_class[key] ^ bit
            if left:
                by_class[key] = left
            else:
                del by_class[key]
        for size in sizes_of.get(free_mask) or self._sizes(free_mask):
            key = (model, state, size)
            by_class[key] = by_class.get(key, 0) | bit

    def _sizes(self, mask: int) -> tuple[int, ...]:
        sizes = self._sizes_of.get(mask)
        if sizes is None:
            sizes = self._sizes_of[mask] = tuple(g for g in range(mask.bit_length()) if mask >> g & 1)
        return sizes

    def durations(self, job: Job) -> Sequence[float]:
        """The job's run time on each of :attr:`sizes` (its own row when it gives exactly those sizes)."""
        if job.sizes == self._size_tuple:
            return job.durations_s
        return [job.duration_for_size(g) for g in self.sizes]

    def available(self, gpu: int) -> bool:
        return self.signature[gpu][1] != 0

    def marginal_w(self, model: int, state: int, size: int, kind: str) -> float:
        """Extra watts when a job of ``kind`` starts on an idle slice of ``size`` of a GPU in ``state``."""
        key = (model, state, size, kind)
        watts = self._marginal.get(key)
        if watts is None:
            power = self.power_w[model]
            after = state + size * self.kind_weight[model][kind]
            watts = power[after] - power[state] if after < len(power) else math.inf
            if watts != watts:
                watts = math.inf
            self._marginal[key] = watts
        return watts


@runtime_checkable
class PlacementPolicy(Protocol):
    """Chooses a GPU for an arriving job from the pool, or -1."""

    name: str
    #: Whether :meth:`choose` reads ``pool.by_class`` (else the pool need not keep it). A placement may also
    #: say ``uses_jobs = True`` (read with ``getattr``, default false): it reads ``pool.jobs``, and may then
    #: choose any GPU, available or not (an off server boots; one a gang holds counts as no choice).
    uses_classes: bool

    def choose(self, job: Job, now_s: float, pool: GpuPool) -> int: ...


#: Registry of placement policies: ``PLACEMENTS.make("best-fit")``.
PLACEMENTS: Registry[PlacementPolicy] = Registry("placement", entry_points="wattsched.placements")


class FirstFit:
    name = "first-fit"
    uses_classes = False

    def choose(self, job: Job, now_s: float, pool: GpuPool) -> int:
        budget = job.deadline_s - now_s
        on_time = 0
        anywhere = 0
        by_size = pool.by_size
        for size, duration in zip(pool.sizes, pool.durations(job), strict=True):
            bits = by_size.get(size, 0)
            if bits:
                anywhere |= bits
                if duration <= budget:
                    on_time |= bits
        chosen = on_time or anywhere
        return lowest_gpu(chosen) if chosen else -1


class BestFit:
    name = "best-fit"
    uses_classes = False

    def choose(self, job: Job, now_s: float, pool: GpuPool) -> int:
        budget = job.deadline_s - now_s
        largest = 0
        by_size = pool.by_size
        # Sizes ascending: the first size that meets the deadline is the tightest fit.
        for size, duration in zip(pool.sizes, pool.durations(job), strict=True):
            bits = by_size.get(size, 0)
            if bits:
                if duration <= budget:
                    return lowest_gpu(bits)
                largest = bits
        return lowest_gpu(largest) if largest else -1


class LeastEnergy:
    name = "least-energy"
    uses_classes = True
    #: Only slices on which the job meets its deadline compete (when there is one).
    deadline_first = False

    def choose(self, job: Job, now_s: float, pool: GpuPool) -> int:
        budget = job.deadline_s - now_s
        kind = job.kind.value
        best: tuple[int, float, int, int] | None = None
        for (model, state, size), bits in pool.by_class.items():
            duration = job.duration_for_size(size)
            energy = pool.marginal_w(model, state, size, kind) * duration
            if self.deadline_first:
                late = 0 if duration <= budget else 1
                candidate = (late, energy if not late else duration, size, lowest_gpu(bits))
            else:
                candidate = (0, energy, size, lowest_gpu(bits))
            if best is None or candidate < best:
                best = candidate
        return best[3] if best is not None else -1


class DeadlineAware(LeastEnergy):
    name = "deadline-aware"
    deadline_first = True


class FewestJobs:
    name = "fewest-jobs"
    uses_classes = False
    uses_jobs = True

    def choose(self, job: Job, now_s: float, pool: GpuPool) -> int:
        jobs = pool.jobs
        return min(range(len(jobs)), key=jobs.__getitem__) if jobs else -1  # min: the first of equals


PLACEMENTS.register("first-fit")(FirstFit)
PLACEMENTS.register("best-fit")(BestFit)
PLACEMENTS.register("least-energy")(LeastEnergy)
PLACEMENTS.register("deadline-aware")(DeadlineAware)
PLACEMENTS.register("fewest-jobs")(FewestJobs)
