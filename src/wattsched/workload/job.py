"""The MIG job model: one deadline job, its scaling family and its run time per slice compute size.

A job gives its run time alone on slices of the compute sizes in ``sizes`` (a trace's ``dur_<g>g_s`` columns;
P1's sizes 1, 2, 3, 4, 7 by default) and on the MIG-disabled GPU (``dur_full_s``). A GPU may need a size the
job does not give; :meth:`Job.duration_for_size` then derives it from the job's scaling family
(docs/concepts/mig-model.md):

* between two given sizes ``a < g < b``: speed ``1/dur`` interpolated linearly in ``g``;
* below the smallest given size ``m``: speed proportional to ``g`` (``dur_g = dur_m · m / g``), every family;
* above the largest given size ``M``: ``linear`` speed proportional to ``g``; ``capped`` no faster than on
``M``
  (the cap is at or below ``M``, or unknown); ``sublinear`` the power law through the two largest given sizes
  (never faster than linear); ``measured``: no rule — an error naming the size.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from wattsched.errors import InputError

__all__ = ["DURATION_COLUMNS", "P1_SIZES", "Job", "JobKind", "Scaling", "duration_column"]

#: Compute sizes of P1's A100-40GB slices (and of every GPU in the catalogue): a job's default ``sizes``.
P1_SIZES: tuple[int, ...] = (1, 2, 3, 4, 7)


def duration_column(size: int) -> str:
    """The trace column of a compute size: ``dur_3g_s``."""
    return f"dur_{size}g_s"


#: Trace columns of P1's sizes (docs/howto/import-trace.md), in ``P1_SIZES`` order (without ``dur_full_s``).
DURATION_COLUMNS: tuple[str, ...] = tuple(duration_column(g) for g in P1_SIZES)


class JobKind(enum.StrEnum):
    INFERENCE = "inference"
    TRAINING = "training"


class Scaling(enum.StrEnum):
    LINEAR = "linear"
    SUBLINEAR = "sublinear"
    CAPPED = "capped"
    MEASURED = "measured"


@dataclass(frozen=True, slots=True)
class Job:
    """A job of a MIG trace (docs/howto/import-trace.md); see the module docstring for
    sizes a job does not give."""

    job_id: str
    arrival_s: float
    deadline_s: float
    kind: JobKind
    scaling: Scaling
    #: Run time alone on a slice of each size in ``sizes`` (same order), seconds.
    durations_s: tuple[float, ...]
    #: Run time on the GPU with MIG disabled, seconds.
    dur_full_s: float
    #: Compute sizes ``durations_s`` is given for, ascending.
    sizes: tuple[int, ...] = P1_SIZES
    #: GPUs the job needs at once (a trace's optional ``gpus`` column); its durations are each GPU's run
    #: time. Only the cluster engine can run a job of more than one GPU.
    gpus: int = 1

    @staticmethod
    def default_full_duration(dur_largest_s: float, scaling: Scaling, speedup: float = 1.06) -> float:
        """``dur_full_s`` when a trace omits it: 6 % faster than the largest slice if linear
        (docs/concepts/mig-model.md)."""
        return dur_largest_s / speedup if scaling == Scaling.LINEAR else dur_largest_s

    def duration_for_size(self, size: int) -> float:
        """Run time on a slice of ``size`` compute slices, given or derived (module docstring)."""
        sizes = self.sizes
        if size in sizes:
            return self.durations_s[sizes.index(size)]
        return self._derived(size)

    def durations_for(self, sizes: tuple[int, ...]) -> tuple[float, ...]:
        """Run times for ``sizes`` followed by ``dur_full_s`` (the simulator's per-job duration row)."""
        if sizes == self.sizes:
            return (*self.durations_s, self.dur_full_s)
        return (*(self.duration_for_size(g) for g in sizes), self.dur_full_s)

    def with_sizes(self, sizes: tuple[int, ...]) -> Job:
        """The same job giving durations for ``sizes`` (derived where not given; itself when unchanged)."""
        if sizes == self.sizes:
            return self
        durations = tuple(self.duration_for_size(g) for g in sizes)
        return Job(
            self.job_id,
            self.arrival_s,
            self.deadline_s,
            self.kind,
            self.scaling,
            durations,
            self.dur_full_s,
            sizes,
            self.gpus,
        )

    def _derived(self, size: int) -> float:
        sizes, durations = self.sizes, self.durations_s
        if size <= 0:
            raise InputError(f"job '{self.job_id}': compute size must be > 0, got {size}")
        low = [g for g in sizes if g < size]
        high = [g for g in sizes if g > size]
        if low and high:
            a, b = low[-1], high[0]
            speed_a, speed_b = 1.0 / durations[sizes.index(a)], 1.0 / durations[sizes.index(b)]
            return 1.0 / (speed_a + (size - a) * (speed_b - speed_a) / (b - a))
        if high:
            m = high[0]
            return durations[sizes.index(m)] * m / size
        top = sizes[-1]
        dur_top = durations[-1]
        if self.scaling == Scaling.LINEAR:
            return dur_top * top / size
        if self.scaling == Scaling.CAPPED:
            return dur_top
        if self.scaling == Scaling.SUBLINEAR and len(sizes) >= 2:
            below = sizes[-2]
            exponent = math.log(durations[-2] / dur_top) / math.log(top / below)
            exponent = min(max(exponent, 0.0), 1.0)
            return dur_top * math.pow(top / size, exponent)
        raise InputError(
            f"job '{self.job_id}' ({self.scaling.value}) has no {duration_column(size)} and no rule "
            f"derives it from sizes {', '.join(map(str, sizes))}",
            column=duration_column(size),
        )
