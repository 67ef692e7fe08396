"""How the energy a GPU measured is shared among the jobs on its MIG slices.

A GPU has one energy counter, not one per slice. wattsched reads it whenever the set of busy slices changes
and divides each interval's energy among the jobs that ran in it, by the GPU's power model (the same model the
simulator uses):

1. **Idle power belongs to every slice.** The model's idle power is divided among all slices of the GPU's
   current layout in proportion to their compute slices (a 4g slice carries four times a 1g slice's share).
   A busy slice's share is charged to its job; the shares of idle slices make the *idle remainder*, charged
   to no job.
2. **Power above idle belongs to the busy slices.** The model's power in the interval's busy state minus its
   idle power is divided among the busy slices in proportion to what each adds to it: its compute slices,
   times its job kind's power above idle at that many busy slices on GPUs whose model has one curve per job
   kind (on the others, compute slices alone).
3. **The measurement sets the total.** The parts of steps 1 and 2 fix only the ratios; they are scaled so that
   they add up to the energy the counter measured in the interval. The result is in whole millijoules,
   rounded by the largest-remainder method (round every part down, then give the millijoules left over, one
   each, to the parts with the largest fractions), so that the jobs' parts and the idle remainder add up to
   the measurement exactly.

A counter that goes backwards (the GPU or its driver was reset) starts afresh: the interval before it is
counted as unknown, reported, and charged to no one.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypeVar

from wattsched.errors import InputError
from wattsched.hardware.gpu.fake_state import busy_state
from wattsched.hardware.mig import Configuration, MigGpu
from wattsched.workload.job import JobKind

__all__ = ["BusySlice", "EnergyLedger", "EnergySplit", "Layout", "UnknownInterval", "split_energy"]

log = logging.getLogger(__name__)
K = TypeVar("K")

#: A run's power selection, as the simulator takes it: ``None`` (the GPU's default), a curve name,
#: ``"kind"``, or a mix ``{curve: weight}``.
PowerSelection = str | Mapping[str, float] | None
#: The slices of a GPU's layout: a configuration, its id, or the compute slices of every slice.
Layout = Configuration | int | str | Sequence[int]


@dataclass(frozen=True)
class BusySlice:
    """A busy slice of an interval: the job running there (``key``, e.g. a Slurm job id), the slice's compute
    slices and the job's kind."""

    key: str
    compute: int
    kind: JobKind = JobKind.INFERENCE


@dataclass(frozen=True)
class EnergySplit:
    """One interval's energy shared out: ``sum(per_job_mj.values()) + idle_remainder_mj == delta_mj``."""

    delta_mj: int
    per_job_mj: Mapping[str, int]
    idle_remainder_mj: int
    #: The model's power in the interval's busy state (the ratios came from it).
    model_power_w: float

    @property
    def per_job_j(self) -> dict[str, float]:
        return {key: mj / 1000.0 for key, mj in self.per_job_mj.items()}


def _layout_compute(gpu: MigGpu, layout: Layout) -> tuple[int, ...]:
    if isinstance(layout, Configuration):
        return tuple(s.compute for s in layout.slices)
    if isinstance(layout, int | str):
        return tuple(s.compute for s in gpu.configuration(layout).slices)
    return tuple(int(c) for c in layout)


def _check(delta_mj: int, gpu: MigGpu, sizes: tuple[int, ...], busy: Sequence[BusySlice]) -> None:
    if isinstance(delta_mj, bool) or not isinstance(delta_mj, int) or delta_mj < 0:
        raise InputError(f"an interval's energy must be a whole number of mJ >= 0, got {delta_mj!r}")
    if not sizes or any(c < 1 for c in sizes) or sum(sizes) > gpu.compute_slices:
        raise InputError(
            f"a layout of {gpu.name} needs slices of >= 1 compute slices, {gpu.compute_slices} in all; "
            f"got {list(sizes)}"
        )
    extra = Counter(b.compute for b in busy) - Counter(sizes)
    if extra:
        raise InputError(
            f"busy slices of compute {sorted(extra.elements())} are not free slices of the layout "
            f"{list(sizes)}"
        )
    for item in busy:
        if item.kind not in tuple(JobKind):
            raise InputError(f"busy slice '{item.key}': unknown job kind '{item.kind}'")


def _largest_remainder(total: int, weights: Mapping[K, Fraction]) -> dict[K, int]:
    """``total`` in whole units in proportion to ``weights`` (ties: first key first); sums to ``total``."""
    weight_sum = sum(weights.values(), Fraction(0))
    quotas = {key: total * w / weight_sum for key, w in weights.items()}
    shares = {key: q.numerator // q.denominator for key, q in quotas.items()}
    left = total - sum(shares.values())
    order = sorted(quotas, key=lambda key: -(quotas[key] - shares[key]))  # stable: ties keep key order
    for key in order[:left]:
        shares[key] += 1
    return shares


def split_energy(
    delta_mj: int,
    gpu: MigGpu,
    layout: Layout,
    busy: Sequence[BusySlice],
    *,
    power_curve: PowerSelection = None,
) -> EnergySplit:
    """Share ``delta_mj`` measured on ``gpu`` with ``layout`` (every slice, busy or not) among ``busy``.

    The rule is the module docstring's. A key named by several busy slices gets their parts added up.
    ``power_curve`` selects the power model's curve as the simulator's option of that name does."""
    sizes = _layout_compute(gpu, layout)
    _check(delta_mj, gpu, sizes, busy)
    table = gpu.power.table(power_curve)
    idle_w = Fraction(table.power_w[0])
    state = busy_state(table, [(b.compute, str(b.kind)) for b in busy])
    model_w = Fraction(table.power_w[state])
    dynamic_w = max(model_w - idle_w, Fraction(0))
    units = table.busy_units(state)
    # What a busy slice adds above idle: its compute slices times its kind's power above idle at `units`.
    adds = [
        b.compute * max(Fraction(table.power_w[units * table.kind_weight[str(b.kind)]]) - idle_w, Fraction(0))
        for b in busy
    ]
    if sum(adds) == 0:
        adds = [Fraction(b.compute) for b in busy]
    adds_sum = sum(adds, Fraction(0))
    compute_sum = sum(sizes)
    parts: dict[str | None, Fraction] = {}  # None: the idle remainder (last, so ties favour jobs)
    for item, add in zip(busy, adds, strict=True):
        part = idle_w * item.compute / compute_sum + (dynamic_w * add / adds_sum if adds_sum else 0)
        parts[item.key] = parts.get(item.key, Fraction(0)) + part
    parts[None] = idle_w * (compute_sum - sum(b.compute for b in busy)) / compute_sum
    if sum(parts.values()) <= 0:  # a model that draws nothing: nothing to charge a job with
        shares = {key: 0 for key in parts} | {None: delta_mj}
    else:
        shares = _largest_remainder(delta_mj, parts)
    remainder = shares.pop(None)
    per_job = {key: mj for key, mj in shares.items() if key is not None}
    return EnergySplit(delta_mj, per_job, remainder, float(model_w))


@dataclass(frozen=True)
class UnknownInterval:
    """An interval whose energy is unknown (the counter went backwards: a GPU or driver reset)."""

    start_s: float
    end_s: float
    reason: str


@dataclass
class EnergyLedger:
    """Per-job energy from a GPU's counter readings (see the module docstring).

    Feed :meth:`add` the readings in time order. A reading's busy slices (and layout) are what runs *from*
    that reading until the next: the interval between two readings is charged to the busy slices of the
    first. Read the totals from :attr:`per_job_mj`, :meth:`energy_j`, :attr:`idle_remainder_mj`.
    """

    gpu: MigGpu
    layout: Layout
    power_curve: PowerSelection = None
    per_job_mj: dict[str, int] = field(default_factory=dict)
    idle_remainder_mj: int = 0
    #: Energy charged so far (jobs + idle remainder): the counter's rise over the known intervals.
    attributed_mj: int = 0
    unknown: list[UnknownInterval] = field(default_factory=list)
    _last: tuple[float, int, tuple[BusySlice, ...]] | None = field(default=None, repr=False)

    def add(
        self, time_s: float, counter_mj: int, busy: Sequence[BusySlice], *, layout: Layout | None = None
    ) -> EnergySplit | None:
        """Take one reading; returns the split of the interval it closes (``None``: first or unknown)."""
        if isinstance(counter_mj, bool) or not isinstance(counter_mj, int):
            raise InputError(f"an energy counter reading must be whole mJ, got {counter_mj!r}")
        if self._last is not None and time_s < self._last[0]:
            raise InputError(f"readings must come in time order: {time_s} s after {self._last[0]} s")
        next_layout = self.layout if layout is None else layout
        _check(0, self.gpu, _layout_compute(self.gpu, next_layout), busy)  # refuse before counting anything
        split = None
        if self._last is not None:
            last_s, last_mj, last_busy = self._last
            if counter_mj < last_mj:
                reason = f"energy counter went back from {last_mj} to {counter_mj} mJ (GPU reset?)"
                log.warning("%s: %s; %.3f s counted as unknown", self.gpu.name, reason, time_s - last_s)
                self.unknown.append(UnknownInterval(last_s, float(time_s), reason))
            else:
                split = split_energy(
                    counter_mj - last_mj, self.gpu, self.layout, last_busy, power_curve=self.power_curve
                )
                for key, mj in split.per_job_mj.items():
                    self.per_job_mj[key] = self.per_job_mj.get(key, 0) + mj
                self.idle_remainder_mj += split.idle_remainder_mj
                self.attributed_mj += split.delta_mj
        self.layout = next_layout
        self._last = (float(time_s), counter_mj, tuple(busy))
        return split

    def energy_j(self, key: str) -> float:
        """The energy charged to job ``key`` so far, in J (0 for a job never seen busy)."""
        return self.per_job_mj.get(key, 0) / 1000.0

    @property
    def per_job_j(self) -> dict[str, float]:
        return {key: mj / 1000.0 for key, mj in self.per_job_mj.items()}

    @property
    def unknown_s(self) -> float:
        """Seconds of unknown energy (intervals ending in a counter reset)."""
        return sum(u.end_s - u.start_s for u in self.unknown)
